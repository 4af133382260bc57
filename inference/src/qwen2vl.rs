//! Qwen2-VL / Qwen2.5-VL specifics: the image processor's patch rows and `grid_thw`, the
//! `<|image_pad|>` expansion, and the 3-D M-RoPE position ids of a prompt.
//!
//! Conventions (transformers' `Qwen2VLImageProcessor` and `get_rope_index`): the image is
//! resized so both sides are multiples of `patch × merge` and its pixel count lies within
//! `[min_pixels, max_pixels]`; repeated `temporal` times, it is cut into patches listed merged
//! block by merged block (`t, h/merge, w/merge, merge, merge`), each patch flattened as
//! `C, temporal, patch, patch`. The vision encoder turns each block of `merge²` patch rows into
//! one feature, so an image takes `t·h·w / merge²` `<|image_pad|>` tokens. Positions: text
//! tokens carry one running index on all three axes; an image's tokens carry their (t, row,
//! col) in the merged grid plus the index where the image starts; the text after it resumes
//! at the image's largest index + 1.

use image::{DynamicImage, RgbImage};

use super::config::ImageConfig;

/// The vision settings of a Qwen2-VL export (`preprocessor_config.json`, `config.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QwenVision {
    /// Patch side in pixels (14).
    pub patch: usize,
    /// Frames per temporal patch (2): a still image is repeated this many times.
    pub temporal: usize,
    /// Spatial merge (2): `merge²` patches become one image token.
    pub merge: usize,
    /// Fewest pixels after resizing.
    pub min_pixels: u64,
    /// Most pixels after resizing.
    pub max_pixels: u64,
}

/// One image as the vision encoder takes it.
#[derive(Debug, Clone)]
pub struct Patches {
    /// `[t·h·w, C·temporal·patch·patch]`, row-major.
    pub rows: Vec<f32>,
    /// Frames / temporal, height / patch, width / patch.
    pub grid_thw: [usize; 3],
}

impl Patches {
    /// Image tokens (and feature rows) this image takes.
    pub fn tokens(&self, merge: usize) -> usize {
        let [t, h, w] = self.grid_thw;
        t * h * w / (merge * merge).max(1)
    }
}

/// The token the chat template writes once per image and the processor repeats.
pub const IMAGE_PAD: &str = "<|image_pad|>";

/// Largest aspect ratio the processor accepts.
const MAX_ASPECT: f64 = 200.0;

/// The processor's output size `(height, width)`: multiples of `factor`, pixel count within
/// `[min, max]` (scaled down or up by one factor, keeping the aspect ratio).
pub fn smart_resize(
    height: u32,
    width: u32,
    factor: u32,
    min: u64,
    max: u64,
) -> Result<(u32, u32), String> {
    if height == 0 || width == 0 || factor == 0 {
        return Err(format!("cannot resize a {width}x{height} image"));
    }
    let (h, w, f) = (f64::from(height), f64::from(width), f64::from(factor));
    if h.max(w) / h.min(w) > MAX_ASPECT {
        return Err(format!(
            "a {width}x{height} image is too elongated (aspect ratio over {MAX_ASPECT})"
        ));
    }
    // Python's round() rounds halves to even; the reference does.
    let mut hb = ((h / f).round_ties_even() * f).max(f);
    let mut wb = ((w / f).round_ties_even() * f).max(f);
    if hb * wb > max as f64 {
        let beta = (h * w / max as f64).sqrt();
        hb = ((h / beta / f).floor() * f).max(f);
        wb = ((w / beta / f).floor() * f).max(f);
    } else if hb * wb < min as f64 {
        let beta = (min as f64 / (h * w)).sqrt();
        hb = (h * beta / f).ceil() * f;
        wb = (w * beta / f).ceil() * f;
    }
    Ok((hb as u32, wb as u32))
}

/// Resizes (when the config says so), rescales, normalises and cuts one image into patch rows.
pub fn prepare(img: &DynamicImage, cfg: &ImageConfig, q: &QwenVision) -> Result<Patches, String> {
    let mut rgb: RgbImage = img.to_rgb8();
    let (w, h) = rgb.dimensions();
    let factor = (q.patch * q.merge) as u32;
    let (nh, nw) = if cfg.resize {
        smart_resize(h, w, factor, q.min_pixels, q.max_pixels)?
    } else {
        (h, w)
    };
    if nh % factor != 0 || nw % factor != 0 || nh == 0 || nw == 0 {
        return Err(format!(
            "a {w}x{h} image without resizing is not a multiple of {factor} pixels"
        ));
    }
    if (nw, nh) != (w, h) {
        rgb = image::imageops::resize(&rgb, nw, nh, super::image::filter(cfg.resample));
    }
    let (width, height) = (nw as usize, nh as usize);
    // Normalised planes [C, H, W].
    let mut planes = vec![0f32; 3 * height * width];
    for (x, y, p) in rgb.enumerate_pixels() {
        let (x, y) = (x as usize, y as usize);
        for c in 0..3 {
            let v = f32::from(p[c]) * cfg.rescale;
            planes[c * height * width + y * width + x] = (v - cfg.mean[c]) / cfg.std[c];
        }
    }
    let (p, m, t) = (q.patch, q.merge, q.temporal.max(1));
    let (gh, gw) = (height / p, width / p);
    let mut rows = Vec::with_capacity(gh * gw * 3 * t * p * p);
    for bh in 0..gh / m {
        for bw in 0..gw / m {
            for mh in 0..m {
                for mw in 0..m {
                    let (y0, x0) = ((bh * m + mh) * p, (bw * m + mw) * p);
                    for c in 0..3 {
                        let plane = &planes[c * height * width..(c + 1) * height * width];
                        // Every temporal copy is the same still frame.
                        for _ in 0..t {
                            for y in y0..y0 + p {
                                rows.extend_from_slice(&plane[y * width + x0..y * width + x0 + p]);
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(Patches {
        rows,
        grid_thw: [1, gh, gw],
    })
}

/// The prompt text one image's `<|image_pad|>` becomes.
pub fn prompt_tokens(patches: &Patches, merge: usize) -> String {
    IMAGE_PAD.repeat(patches.tokens(merge))
}

/// The M-RoPE positions `[t, h, w]` of each token of one unpadded prompt. Image tokens
/// (`image_id`) are taken in blocks of each image's merged grid, in order.
pub fn rope_index(
    ids: &[u32],
    image_id: u32,
    grids: &[[usize; 3]],
    merge: usize,
) -> Result<Vec<[i64; 3]>, String> {
    let merge = merge.max(1);
    let mut out = Vec::with_capacity(ids.len());
    let mut next = 0i64;
    let mut images = grids.iter();
    let mut i = 0;
    while i < ids.len() {
        if ids[i] != image_id {
            out.push([next; 3]);
            next += 1;
            i += 1;
            continue;
        }
        let [t, h, w] = *images
            .next()
            .ok_or("more image tokens than images in the prompt")?;
        let (lh, lw) = (h / merge, w / merge);
        let n = t * lh * lw;
        if n == 0 || ids.len() < i + n || ids[i..i + n].iter().any(|t| *t != image_id) {
            return Err(format!(
                "image of grid {t}x{h}x{w} needs {n} consecutive image tokens"
            ));
        }
        for k in 0..n {
            let (tt, hh, ww) = (k / (lh * lw), (k / lw) % lh, k % lw);
            out.push([next + tt as i64, next + hh as i64, next + ww as i64]);
        }
        next += t.max(lh).max(lw) as i64;
        i += n;
    }
    if images.next().is_some() {
        return Err("fewer image tokens than images in the prompt".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_resize_keeps_sides_multiples_of_the_factor_within_the_pixel_bounds() {
        // Already a fitting size: unchanged.
        assert_eq!(smart_resize(56, 84, 28, 3136, 147456), Ok((56, 84)));
        // Rounded to the nearest multiple, halves to even: 42 / 28 = 1.5 → 2, 70 / 28 = 2.5 → 2.
        assert_eq!(smart_resize(42, 70, 28, 0, 1 << 30), Ok((56, 56)));
        // Too many pixels: scaled by sqrt(1280·720 / 147456) = 2.5, then floored.
        assert_eq!(smart_resize(720, 1280, 28, 3136, 147456), Ok((280, 504)));
        // Too few: scaled up by sqrt(3136 / (20·30)), then ceiled.
        assert_eq!(smart_resize(20, 30, 28, 3136, 147456), Ok((56, 84)));
        // Qwen2-VL-2B's bounds keep a 1280x720 screenshot near its size.
        assert_eq!(smart_resize(720, 1280, 28, 3136, 12845056), Ok((728, 1288)));
        assert!(smart_resize(10, 5000, 28, 3136, 147456).is_err());
        assert!(smart_resize(0, 10, 28, 3136, 147456).is_err());
    }

    fn cfg() -> (ImageConfig, QwenVision) {
        (
            ImageConfig {
                longest_edge: 0,
                tile: 0,
                split: false,
                resize: true,
                resample: 3,
                rescale: 1.0,
                mean: [0.0; 3],
                std: [1.0; 3],
            },
            QwenVision {
                patch: 14,
                temporal: 2,
                merge: 2,
                min_pixels: 3136,
                max_pixels: 147456,
            },
        )
    }

    #[test]
    fn patch_rows_list_merged_blocks_then_channel_frame_and_pixel() {
        // Pixel value encodes where it is: R = x, G = y, B = 7.
        let img = DynamicImage::ImageRgb8(RgbImage::from_fn(84, 56, |x, y| {
            image::Rgb([x as u8, y as u8, 7])
        }));
        let (c, q) = cfg();
        let p = prepare(&img, &c, &q).unwrap();
        assert_eq!(p.grid_thw, [1, 4, 6]);
        let width = 3 * 2 * 14 * 14;
        assert_eq!(p.rows.len(), 24 * width);
        assert_eq!(p.tokens(2), 6);
        // Row r: merged block r / 4 (3 blocks per merged row), then (r % 4) / 2, r % 2 inside it.
        for r in 0..24 {
            let (block, inner) = (r / 4, r % 4);
            let py = (block / 3) * 2 + inner / 2;
            let px = (block % 3) * 2 + inner % 2;
            let row = &p.rows[r * width..(r + 1) * width];
            // Channel R, first frame, pixel (0, 0) of the patch; then (dx 3, dy 5).
            assert_eq!(row[0], (px * 14) as f32, "row {r}");
            assert_eq!(row[5 * 14 + 3], (px * 14 + 3) as f32, "row {r}");
            // Channel G of the second frame equals the first (a still image).
            let g = 2 * 14 * 14;
            assert_eq!(row[g + 5 * 14], (py * 14 + 5) as f32, "row {r}");
            assert_eq!(row[g + 196 + 5 * 14], (py * 14 + 5) as f32, "row {r}");
            assert_eq!(row[2 * g + 100], 7.0);
        }
        assert_eq!(prompt_tokens(&p, 2), IMAGE_PAD.repeat(6));
    }

    #[test]
    fn rope_index_puts_images_on_their_grid_and_resumes_after_the_largest_index() {
        let (i, x) = (9, 1);
        // Two text tokens, a 1x4x6 image (2x3 merged), one text token, a 1x2x2 image (1x1).
        let ids = [x, x, i, i, i, i, i, i, x, i, x];
        let pos = rope_index(&ids, i, &[[1, 4, 6], [1, 2, 2]], 2).unwrap();
        let want: Vec<[i64; 3]> = vec![
            [0, 0, 0],
            [1, 1, 1],
            [2, 2, 2],
            [2, 2, 3],
            [2, 2, 4],
            [2, 3, 2],
            [2, 3, 3],
            [2, 3, 4],
            [5, 5, 5],
            [6, 6, 6],
            [7, 7, 7],
        ];
        assert_eq!(pos, want);
        assert!(
            rope_index(&ids, i, &[[1, 4, 6]], 2).is_err(),
            "image tokens left over"
        );
        assert!(
            rope_index(&ids[..4], i, &[[1, 4, 6]], 2).is_err(),
            "a cut image"
        );
        assert!(
            rope_index(&[x, x], i, &[[1, 2, 2]], 2).is_err(),
            "an image without tokens"
        );
    }
}
