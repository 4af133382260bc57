//! Image preprocessing as the Idefics3 / SmolVLM processor does it: resize so the longest
//! edge fits, optionally split into square tiles plus a downscaled global view, rescale,
//! normalise, and pad each tile to the encoder's size with a pixel mask.

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage};

use super::config::ImageConfig;

/// One image, ready for the vision encoder.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Tiles as `[3, tile, tile]` planes, the global view last (or alone).
    pub tiles: Vec<Vec<f32>>,
    /// Which pixels of each tile are real (not padding), `[tile, tile]`.
    pub masks: Vec<Vec<bool>>,
    /// Tile rows and columns (0 when not split).
    pub grid: (usize, usize),
}

fn resize_longest(img: &RgbImage, longest: u32) -> RgbImage {
    let (w, h) = img.dimensions();
    if w.max(h) == longest {
        return img.clone();
    }
    let scale = longest as f32 / w.max(h) as f32;
    let (nw, nh) = (
        ((w as f32 * scale).round() as u32).max(1),
        ((h as f32 * scale).round() as u32).max(1),
    );
    image::imageops::resize(img, nw, nh, FilterType::Triangle)
}

fn tile_tensor(img: &RgbImage, cfg: &ImageConfig) -> (Vec<f32>, Vec<bool>) {
    let t = cfg.tile as usize;
    let mut planes = vec![0f32; 3 * t * t];
    let mut mask = vec![false; t * t];
    for (x, y, p) in img.enumerate_pixels() {
        let (x, y) = (x as usize, y as usize);
        if x >= t || y >= t {
            continue;
        }
        mask[y * t + x] = true;
        for c in 0..3 {
            let v = p[c] as f32 * cfg.rescale;
            planes[c * t * t + y * t + x] = (v - cfg.mean[c]) / cfg.std[c];
        }
    }
    (planes, mask)
}

/// Prepares one image.
pub fn prepare(img: &DynamicImage, cfg: &ImageConfig) -> Prepared {
    let rgb = img.to_rgb8();
    let resized = resize_longest(&rgb, cfg.longest_edge.max(1));
    let tile = cfg.tile.max(1);
    let global = resize_longest(&resized, tile);
    if !cfg.split || resized.width().max(resized.height()) <= tile {
        let (t, m) = tile_tensor(&global, cfg);
        return Prepared {
            tiles: vec![t],
            masks: vec![m],
            grid: (0, 0),
        };
    }
    // Split: round the image up to whole tiles, then cut row by row.
    let cols = resized.width().div_ceil(tile);
    let rows = resized.height().div_ceil(tile);
    let grid_img =
        image::imageops::resize(&resized, cols * tile, rows * tile, FilterType::Triangle);
    let mut tiles = Vec::new();
    let mut masks = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            let sub =
                image::imageops::crop_imm(&grid_img, c * tile, r * tile, tile, tile).to_image();
            let (t, m) = tile_tensor(&sub, cfg);
            tiles.push(t);
            masks.push(m);
        }
    }
    let (t, m) = tile_tensor(&global, cfg);
    tiles.push(t);
    masks.push(m);
    Prepared {
        tiles,
        masks,
        grid: (rows as usize, cols as usize),
    }
}

/// The prompt text one image expands to (Idefics3's `<image>` expansion): per tile
/// `<fake_token_around_image><row_r_col_c><image>×n`, rows separated by newlines, then the
/// global view `<fake_token_around_image><global-img><image>×n<fake_token_around_image>`.
pub fn prompt_tokens(grid: (usize, usize), image_seq_len: usize) -> String {
    let image = "<image>".repeat(image_seq_len);
    let (rows, cols) = grid;
    if rows == 0 || cols == 0 {
        return format!("<fake_token_around_image><global-img>{image}<fake_token_around_image>");
    }
    let mut out = String::new();
    for r in 1..=rows {
        for c in 1..=cols {
            out.push_str(&format!(
                "<fake_token_around_image><row_{r}_col_{c}>{image}"
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\n<fake_token_around_image><global-img>{image}<fake_token_around_image>"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(split: bool) -> ImageConfig {
        ImageConfig {
            longest_edge: if split { 1024 } else { 512 },
            tile: 512,
            split,
            rescale: 1.0 / 255.0,
            mean: [0.5; 3],
            std: [0.5; 3],
        }
    }

    #[test]
    fn a_screenshot_becomes_one_padded_normalised_tile() {
        let img =
            DynamicImage::ImageRgb8(RgbImage::from_pixel(1280, 720, image::Rgb([255, 0, 128])));
        let p = prepare(&img, &cfg(false));
        assert_eq!((p.tiles.len(), p.grid), (1, (0, 0)));
        let t = 512 * 512;
        assert_eq!(p.tiles[0].len(), 3 * t);
        // 1280x720 → 512x288: rows below 288 are padding.
        assert!(p.masks[0][287 * 512 + 511] && !p.masks[0][288 * 512]);
        assert!((p.tiles[0][0] - 1.0).abs() < 1e-6, "255 → 1.0");
        assert!((p.tiles[0][t] + 1.0).abs() < 1e-6, "0 → -1.0");
        assert_eq!(p.tiles[0][288 * 512], 0.0, "padding is zero");
    }

    #[test]
    fn large_images_split_into_tiles_plus_a_global_view() {
        let img = DynamicImage::ImageRgb8(RgbImage::new(1280, 720));
        let p = prepare(&img, &cfg(true));
        assert_eq!(p.grid, (2, 2), "1024x576 rounds up to 2x2 tiles of 512");
        assert_eq!(p.tiles.len(), 5, "four tiles and the global view");
        let text = prompt_tokens((1, 2), 2);
        assert_eq!(
            text,
            "<fake_token_around_image><row_1_col_1><image><image><fake_token_around_image><row_1_col_2><image><image>\n\n<fake_token_around_image><global-img><image><image><fake_token_around_image>"
        );
        assert_eq!(
            prompt_tokens((0, 0), 1),
            "<fake_token_around_image><global-img><image><fake_token_around_image>"
        );
    }
}
