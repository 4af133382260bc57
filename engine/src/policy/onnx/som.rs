//! Set-of-marks: numbered boxes drawn over a screenshot so a vision model can name elements
//! by number. The digits come from a tiny built-in bitmap font (no font files needed).

use browser_pool::Element;
use image::{Rgb, RgbImage};

/// 3x5 bitmaps of the digits 0-9, one row per byte (3 low bits).
const DIGITS: [[u8; 5]; 10] = [
    [0b111, 0b101, 0b101, 0b101, 0b111],
    [0b010, 0b110, 0b010, 0b010, 0b111],
    [0b111, 0b001, 0b111, 0b100, 0b111],
    [0b111, 0b001, 0b111, 0b001, 0b111],
    [0b101, 0b101, 0b111, 0b001, 0b001],
    [0b111, 0b100, 0b111, 0b001, 0b111],
    [0b111, 0b100, 0b111, 0b101, 0b111],
    [0b111, 0b001, 0b010, 0b010, 0b010],
    [0b111, 0b101, 0b111, 0b101, 0b111],
    [0b111, 0b101, 0b111, 0b001, 0b111],
];

const COLOURS: [[u8; 3]; 6] = [
    [230, 25, 75],
    [60, 120, 216],
    [0, 130, 60],
    [245, 130, 48],
    [145, 30, 180],
    [0, 128, 128],
];

fn put(img: &mut RgbImage, x: i64, y: i64, c: Rgb<u8>) {
    if x >= 0 && y >= 0 && (x as u32) < img.width() && (y as u32) < img.height() {
        img.put_pixel(x as u32, y as u32, c);
    }
}

fn label(img: &mut RgbImage, x: i64, y: i64, n: u32, bg: Rgb<u8>) {
    const SCALE: i64 = 2;
    let digits: Vec<usize> = n.to_string().bytes().map(|b| (b - b'0') as usize).collect();
    let w = digits.len() as i64 * 4 * SCALE + SCALE;
    let h = 7 * SCALE;
    for dy in 0..h {
        for dx in 0..w {
            put(img, x + dx, y + dy, bg);
        }
    }
    for (i, d) in digits.iter().enumerate() {
        for (row, bits) in DIGITS[*d].iter().enumerate() {
            for col in 0..3 {
                if bits >> (2 - col) & 1 == 1 {
                    for sy in 0..SCALE {
                        for sx in 0..SCALE {
                            put(
                                img,
                                x + SCALE + (i as i64 * 4 + col) * SCALE + sx,
                                y + SCALE + row as i64 * SCALE + sy,
                                Rgb([255, 255, 255]),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Draws a box and its number for every element in the viewport.
pub fn draw(img: &mut RgbImage, elements: &[Element]) {
    for e in elements.iter().filter(|e| e.in_viewport) {
        let c = Rgb(COLOURS[e.id as usize % COLOURS.len()]);
        let (x0, y0) = (e.bbox.x.round() as i64, e.bbox.y.round() as i64);
        let (x1, y1) = (
            (e.bbox.x + e.bbox.width).round() as i64,
            (e.bbox.y + e.bbox.height).round() as i64,
        );
        for t in 0..2 {
            for x in x0..=x1 {
                put(img, x, y0 + t, c);
                put(img, x, y1 - t, c);
            }
            for y in y0..=y1 {
                put(img, x0 + t, y, c);
                put(img, x1 - t, y, c);
            }
        }
        label(img, x0, (y0 - 14).max(0), e.id, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use browser_pool::Rect;

    #[test]
    fn boxes_and_numbers_are_drawn_where_the_elements_are() {
        let mut img = RgbImage::from_pixel(200, 100, Rgb([255, 255, 255]));
        let e = Element {
            id: 7,
            tag: "button".into(),
            role: "button".into(),
            label: "Go".into(),
            value: None,
            placeholder: None,
            checked: None,
            disabled: false,
            options: vec![],
            href: None,
            input_type: None,
            bbox: Rect {
                x: 50.0,
                y: 40.0,
                width: 60.0,
                height: 30.0,
            },
            in_viewport: true,
        };
        draw(&mut img, &[e]);
        assert_ne!(
            img.get_pixel(80, 40),
            &Rgb([255, 255, 255]),
            "top edge drawn"
        );
        assert_eq!(
            img.get_pixel(80, 55),
            &Rgb([255, 255, 255]),
            "inside left clear"
        );
        assert_ne!(
            img.get_pixel(51, 27),
            &Rgb([255, 255, 255]),
            "label above the box"
        );
    }
}
