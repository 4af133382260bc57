//! Set-of-marks: numbered boxes drawn over a screenshot so a vision model can name elements
//! by number. The digits come from a tiny built-in bitmap font (no font files needed).

use image::{Rgb, RgbImage};

use crate::observation::{Element, Screenshot};

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

/// Draws a box and its number for every element in the viewport. `scale` is image pixels
/// per CSS pixel (the screenshot's [`Screenshot::scale`](crate::Screenshot::scale)).
pub fn draw(img: &mut RgbImage, elements: &[Element], scale: f64) {
    for e in elements.iter().filter(|e| e.in_viewport) {
        let c = Rgb(COLOURS[e.id as usize % COLOURS.len()]);
        let px = |v: f64| (v * scale).round() as i64;
        let (x0, y0) = (px(e.bbox.x), px(e.bbox.y));
        let (x1, y1) = (px(e.bbox.x + e.bbox.width), px(e.bbox.y + e.bbox.height));
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

/// A copy of `shot` with the marks drawn on, encoded the same way.
pub(crate) fn overlay(
    shot: &Screenshot,
    elements: &[Element],
    jpeg_quality: u8,
) -> Result<Screenshot, String> {
    let img = image::load_from_memory(&shot.bytes).map_err(|e| format!("decoding: {e}"))?;
    let mut rgb = img.to_rgb8();
    draw(&mut rgb, elements, shot.scale);
    let mut bytes = Vec::new();
    let mut out = std::io::Cursor::new(&mut bytes);
    if shot.mime == "image/png" {
        rgb.write_to(&mut out, image::ImageFormat::Png)
            .map_err(|e| format!("encoding: {e}"))?;
    } else {
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, jpeg_quality)
            .encode_image(&rgb)
            .map_err(|e| format!("encoding: {e}"))?;
    }
    Ok(Screenshot {
        bytes,
        mime: shot.mime,
        width: rgb.width(),
        height: rgb.height(),
        scale: shot.scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observation::Rect;

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
        draw(&mut img, std::slice::from_ref(&e), 1.0);
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
        // At device scale 2 the same element lands at twice the pixel coordinates.
        let mut big = RgbImage::from_pixel(400, 200, Rgb([255, 255, 255]));
        draw(&mut big, &[e], 2.0);
        assert_ne!(
            big.get_pixel(160, 80),
            &Rgb([255, 255, 255]),
            "scaled top edge"
        );
        assert_eq!(
            big.get_pixel(160, 110),
            &Rgb([255, 255, 255]),
            "scaled inside"
        );
    }
}
