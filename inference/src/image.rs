//! Image preprocessing as the Idefics3 / SmolVLM image processor does it, driven by its
//! `preprocessor_config.json`: resize so the longest edge is `size.longest_edge` (aspect
//! kept, the short side made even); then either squash the whole image to one square
//! encoder tile (no splitting), or resize both sides up to multiples of the tile (aspect not
//! kept), cut it into tiles row by row and add the whole image squashed to one tile as the
//! global view. Pixels are rescaled and normalised per channel; the mask marks real pixels.

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

/// The processor's resampling filter by PIL's numbering (`resample` in the config).
pub fn filter(resample: u32) -> FilterType {
    match resample {
        0 => FilterType::Nearest,
        2 => FilterType::Triangle,
        3 => FilterType::CatmullRom,
        // 1 (LANCZOS) is what Idefics3 ships; 4 (BOX) and 5 (HAMMING) have no exact match.
        _ => FilterType::Lanczos3,
    }
}

/// The largest side the processor lets an image keep.
const MAX_IMAGE_SIZE: u32 = 4096;

/// Output size of the first resize: longest edge `longest`, the other side scaled and
/// rounded down, then up to an even number; both capped at [`MAX_IMAGE_SIZE`].
pub fn longest_edge_size((w, h): (u32, u32), longest: u32) -> (u32, u32) {
    let aspect = f64::from(w) / f64::from(h.max(1));
    let (mut w, mut h) = if w >= h {
        let h = (f64::from(longest) / aspect) as u32;
        (longest, h + h % 2)
    } else {
        let w = (f64::from(longest) * aspect) as u32;
        (w + w % 2, longest)
    };
    if w >= h && w > MAX_IMAGE_SIZE {
        w = MAX_IMAGE_SIZE;
        h = (f64::from(w) / aspect) as u32;
    } else if h > w && h > MAX_IMAGE_SIZE {
        h = MAX_IMAGE_SIZE;
        w = (f64::from(h) * aspect) as u32;
    }
    (w.max(1), h.max(1))
}

/// Output size before splitting: the longer side rounded up to a multiple of the tile, the
/// other scaled from it, then rounded up to a multiple too.
pub fn tile_multiple_size((w, h): (u32, u32), tile: u32) -> (u32, u32) {
    let aspect = f64::from(w) / f64::from(h.max(1));
    if w >= h {
        let w = w.div_ceil(tile) * tile;
        let h = ((f64::from(w) / aspect) as u32).div_ceil(tile).max(1) * tile;
        (w, h)
    } else {
        let h = h.div_ceil(tile) * tile;
        let w = ((f64::from(h) * aspect) as u32).div_ceil(tile).max(1) * tile;
        (w, h)
    }
}

fn resize(img: &RgbImage, (w, h): (u32, u32), cfg: &ImageConfig) -> RgbImage {
    if img.dimensions() == (w, h) {
        return img.clone();
    }
    image::imageops::resize(img, w, h, filter(cfg.resample))
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
            let v = f32::from(p[c]) * cfg.rescale;
            planes[c * t * t + y * t + x] = (v - cfg.mean[c]) / cfg.std[c];
        }
    }
    (planes, mask)
}

/// Prepares one image.
pub fn prepare(img: &DynamicImage, cfg: &ImageConfig) -> Prepared {
    let mut rgb = img.to_rgb8();
    let tile = cfg.tile.max(1);
    if cfg.resize {
        let size = longest_edge_size(rgb.dimensions(), cfg.longest_edge.max(1));
        rgb = resize(&rgb, size, cfg);
    }
    let single = |img: &RgbImage| {
        let (t, m) = tile_tensor(img, cfg);
        Prepared {
            tiles: vec![t],
            masks: vec![m],
            grid: (0, 0),
        }
    };
    if !cfg.split {
        return single(&resize(&rgb, (tile, tile), cfg));
    }
    let whole = resize(&rgb, tile_multiple_size(rgb.dimensions(), tile), cfg);
    let (w, h) = whole.dimensions();
    if w <= tile && h <= tile {
        return single(&whole);
    }
    let (rows, cols) = (h.div_ceil(tile), w.div_ceil(tile));
    let (th, tw) = (h.div_ceil(rows), w.div_ceil(cols));
    let mut tiles = Vec::new();
    let mut masks = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            let (x, y) = (c * tw, r * th);
            let sub = image::imageops::crop_imm(&whole, x, y, tw.min(w - x), th.min(h - y));
            let (t, m) = tile_tensor(&sub.to_image(), cfg);
            tiles.push(t);
            masks.push(m);
        }
    }
    let (t, m) = tile_tensor(&resize(&whole, (tile, tile), cfg), cfg);
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
            longest_edge: if split { 2048 } else { 512 },
            tile: 512,
            split,
            resize: true,
            resample: 1,
            rescale: 1.0 / 255.0,
            mean: [0.5; 3],
            std: [0.5; 3],
        }
    }

    /// Red left half, blue right half; the bottom tenth green.
    fn halves(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
            if y >= h - h / 10 {
                image::Rgb([0, 255, 0])
            } else if x < w / 2 {
                image::Rgb([255, 0, 0])
            } else {
                image::Rgb([0, 0, 255])
            }
        }))
    }

    fn pixel(p: &Prepared, tile: usize, x: usize, y: usize) -> [f32; 3] {
        let t = 512 * 512;
        [0, 1, 2].map(|c| p.tiles[tile][c * t + y * 512 + x])
    }

    #[test]
    fn without_splitting_the_screenshot_is_squashed_to_one_full_tile() {
        let p = prepare(&halves(1280, 720), &cfg(false));
        assert_eq!((p.tiles.len(), p.grid), (1, (0, 0)));
        assert_eq!(p.tiles[0].len(), 3 * 512 * 512);
        assert!(
            p.masks[0].iter().all(|m| *m),
            "no padding: the aspect is not kept"
        );
        // Normalised: 255 → 1.0, 0 → -1.0. The left half fills the tile's left half.
        let left = pixel(&p, 0, 100, 200);
        assert!(
            (left[0] - 1.0).abs() < 1e-3 && (left[2] + 1.0).abs() < 1e-3,
            "{left:?}"
        );
        let right = pixel(&p, 0, 400, 200);
        assert!(
            (right[2] - 1.0).abs() < 1e-3 && (right[0] + 1.0).abs() < 1e-3,
            "{right:?}"
        );
        // The picture reaches the tile's last row (it was padding when the aspect was kept).
        let bottom = pixel(&p, 0, 100, 511);
        assert!(bottom[1] > 0.0, "{bottom:?}");
    }

    #[test]
    fn with_splitting_tiles_cover_a_tile_multiple_resize_plus_a_squashed_global_view() {
        let c = cfg(true);
        // 1280x720 → 2048x1152 (longest edge) → 2048x1536 (multiples of 512): 3 rows, 4 cols.
        assert_eq!(longest_edge_size((1280, 720), 2048), (2048, 1152));
        assert_eq!(tile_multiple_size((2048, 1152), 512), (2048, 1536));
        let p = prepare(&halves(1280, 720), &c);
        assert_eq!(p.grid, (3, 4));
        assert_eq!(p.tiles.len(), 13, "twelve tiles and the global view");
        assert!(p.masks.iter().all(|m| m.iter().all(|v| *v)));
        // Row-major: tile 1 (row 1, col 2) is red, tile 2 (row 1, col 3) blue.
        assert!(pixel(&p, 1, 256, 256)[0] > 0.9 && pixel(&p, 2, 256, 256)[2] > 0.9);
        // The global view is the whole image squashed: red then blue, green at the bottom.
        let g = 12;
        assert!(pixel(&p, g, 100, 200)[0] > 0.9 && pixel(&p, g, 400, 200)[2] > 0.9);
        assert!(pixel(&p, g, 100, 511)[1] > 0.0);

        // Portrait and odd shapes, as the processor rounds them.
        assert_eq!(prepare(&halves(720, 1280), &c).grid, (4, 3));
        assert_eq!(longest_edge_size((1000, 10), 2048), (2048, 20));
        assert_eq!(tile_multiple_size((2048, 20), 512), (2048, 512));
        assert_eq!(prepare(&halves(1000, 10), &c).grid, (1, 4));
        // Small enough for one tile: no split, one (square) tile.
        let mut small = c.clone();
        small.longest_edge = 512;
        let p = prepare(&halves(1280, 720), &small);
        assert_eq!((p.grid, p.tiles.len()), ((0, 0), 1));
        assert!(p.masks[0].iter().all(|m| *m));
    }

    #[test]
    fn prompt_tokens_follow_the_grid() {
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
