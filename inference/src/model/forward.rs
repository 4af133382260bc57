//! One forward pass: token embeddings, image features spliced into their placeholder rows,
//! positions (plain or M-RoPE), and the decoder with its KV cache (the past it hands back).

use half::f16;
use ort::value::{DynValue, Tensor, TensorElementType};

use super::{Model, Past, Pixels, Prompt, rt, to_f32};
use crate::OnnxError;
use crate::config::VisionLayout;
use crate::image::Prepared;
use crate::qwen2vl::{self, Patches};

impl Model {
    pub(super) fn embed(
        &mut self,
        ids: Vec<i64>,
        batch: usize,
        len: usize,
    ) -> Result<Vec<f32>, OnnxError> {
        let input = Tensor::from_array(([batch, len], ids)).map_err(rt)?;
        let outputs = self
            .embed
            .run(ort::inputs!["input_ids" => input])
            .map_err(rt)?;
        to_f32(&outputs[0])
    }

    /// The features of a prompt's (or a batch's) images, rows in image order.
    pub(super) fn image_features(&mut self, images: &[&Pixels]) -> Result<Vec<f32>, OnnxError> {
        let tiles: Vec<&Prepared> = images
            .iter()
            .filter_map(|p| match p {
                Pixels::Tiles(t) => Some(t),
                Pixels::Patches(_) => None,
            })
            .collect();
        let patches: Vec<&Patches> = images
            .iter()
            .filter_map(|p| match p {
                Pixels::Patches(p) => Some(p),
                Pixels::Tiles(_) => None,
            })
            .collect();
        match (tiles.is_empty(), patches.is_empty()) {
            (_, true) => self.tile_features(&tiles),
            (true, false) => self.patch_features(&patches),
            (false, false) => Err(OnnxError::Prompt(
                "tiles and patch rows in one batch: images prepared for different models".into(),
            )),
        }
    }

    pub(super) fn patch_features(&mut self, images: &[&Patches]) -> Result<Vec<f32>, OnnxError> {
        let patches: usize = images
            .iter()
            .map(|p| p.grid_thw.iter().product::<usize>())
            .sum();
        let rows: Vec<f32> = images.iter().flat_map(|p| p.rows.iter().copied()).collect();
        let width = rows.len() / patches.max(1);
        let grid: Vec<i64> = images
            .iter()
            .flat_map(|p| p.grid_thw.map(|v| v as i64))
            .collect();
        let pixel_values: DynValue = match self.pixels_type {
            TensorElementType::Float16 => Tensor::from_array((
                [patches, width],
                rows.iter().map(|v| f16::from_f32(*v)).collect::<Vec<_>>(),
            ))
            .map_err(rt)?
            .into_dyn(),
            _ => Tensor::from_array(([patches, width], rows))
                .map_err(rt)?
                .into_dyn(),
        };
        let grid_name = self
            .grid_input
            .clone()
            .ok_or_else(|| OnnxError::Model("the vision encoder takes no grid_thw".into()))?;
        let grid = Tensor::from_array(([images.len(), 3], grid)).map_err(rt)?;
        let vision = self
            .vision
            .as_mut()
            .ok_or_else(|| OnnxError::Model("this model has no vision encoder".into()))?;
        let inputs: Vec<(
            std::borrow::Cow<'_, str>,
            ort::session::SessionInputValue<'_>,
        )> = vec![
            ("pixel_values".into(), pixel_values.into()),
            (grid_name.into(), grid.into_dyn().into()),
        ];
        let outputs = vision.run(inputs).map_err(rt)?;
        to_f32(&outputs[0])
    }

    pub(super) fn tile_features(&mut self, tiles: &[&Prepared]) -> Result<Vec<f32>, OnnxError> {
        let n: usize = tiles.iter().map(|p| p.tiles.len()).sum();
        let t = self.cfg.image.tile as usize;
        let mut pixels = Vec::with_capacity(n * 3 * t * t);
        let mut mask = Vec::with_capacity(n * t * t);
        for p in tiles {
            for (tile, m) in p.tiles.iter().zip(&p.masks) {
                pixels.extend_from_slice(tile);
                mask.extend_from_slice(m);
            }
        }
        let pixel_values: DynValue = match self.pixels_type {
            TensorElementType::Float16 => Tensor::from_array((
                [1, n, 3, t, t],
                pixels.iter().map(|v| f16::from_f32(*v)).collect::<Vec<_>>(),
            ))
            .map_err(rt)?
            .into_dyn(),
            _ => Tensor::from_array(([1, n, 3, t, t], pixels))
                .map_err(rt)?
                .into_dyn(),
        };
        let mask = Tensor::from_array(([1, n, t, t], mask)).map_err(rt)?;
        let vision = self
            .vision
            .as_mut()
            .ok_or_else(|| OnnxError::Model("this model has no vision encoder".into()))?;
        let outputs = vision
            .run(ort::inputs!["pixel_values" => pixel_values, "pixel_attention_mask" => mask])
            .map_err(rt)?;
        to_f32(&outputs[0])
    }

    pub(super) fn embeds_value(
        &self,
        data: Vec<f32>,
        batch: usize,
        len: usize,
        hidden: usize,
    ) -> Result<DynValue, OnnxError> {
        Ok(match self.embeds_type {
            TensorElementType::Float16 => Tensor::from_array((
                [batch, len, hidden],
                data.into_iter().map(f16::from_f32).collect::<Vec<_>>(),
            ))
            .map_err(rt)?
            .into_dyn(),
            _ => Tensor::from_array(([batch, len, hidden], data))
                .map_err(rt)?
                .into_dyn(),
        })
    }

    pub(super) fn empty_past(&self, batch: usize) -> Result<Past, OnnxError> {
        let shape = [batch, self.cfg.kv_heads, 0, self.cfg.head_dim];
        let mut out = Vec::new();
        for i in 0..self.cfg.layers {
            for kind in ["key", "value"] {
                let v: DynValue = match self.kv_type {
                    TensorElementType::Float16 => Tensor::<f16>::from_array((shape, Vec::new()))
                        .map_err(rt)?
                        .into_dyn(),
                    _ => Tensor::<f32>::from_array((shape, Vec::new()))
                        .map_err(rt)?
                        .into_dyn(),
                };
                out.push((format!("past_key_values.{i}.{kind}"), v));
            }
        }
        Ok(out)
    }

    /// The prefill positions of one unpadded prompt, per token `[t, h, w]` (the three are
    /// equal for text and for models without M-RoPE).
    pub(super) fn prompt_positions(
        &self,
        ids: &[u32],
        images: &[Pixels],
    ) -> Result<Vec<[i64; 3]>, OnnxError> {
        if !self.mrope {
            return Ok((0..ids.len() as i64).map(|i| [i; 3]).collect());
        }
        let merge = match &self.cfg.layout {
            VisionLayout::Qwen2Vl(q) => q.merge,
            VisionLayout::Idefics3 => 1,
        };
        let grids: Vec<[usize; 3]> = images
            .iter()
            .filter_map(|p| match p {
                Pixels::Patches(p) => Some(p.grid_thw),
                Pixels::Tiles(_) => None,
            })
            .collect();
        match self.cfg.image_token_id {
            Some(image_id) => {
                qwen2vl::rope_index(ids, image_id, &grids, merge).map_err(OnnxError::Prompt)
            }
            None => Ok((0..ids.len() as i64).map(|i| [i; 3]).collect()),
        }
    }

    /// The decoder's prefill positions of a prompt, per token `[t, h, w]`: what
    /// [`Model::generate`] feeds (with M-RoPE, image tokens sit on their merged grid).
    pub fn positions(&self, prompt: &Prompt) -> Result<Vec<[i64; 3]>, OnnxError> {
        let ids = self.encode(&prompt.text)?;
        self.prompt_positions(&ids, &prompt.images)
    }

    /// Flattens per-row positions (left-padded to `len`, padding at 1) into the decoder's
    /// `position_ids` layout.
    pub(super) fn position_values(&self, rows: &[Vec<[i64; 3]>], len: usize) -> Vec<i64> {
        let axes = if self.mrope { 3 } else { 1 };
        let mut out = Vec::with_capacity(axes * rows.len() * len);
        for axis in 0..axes {
            for row in rows {
                out.extend(std::iter::repeat_n(1i64, len - row.len()));
                out.extend(row.iter().map(|p| p[axis]));
            }
        }
        out
    }

    /// One decoder call: returns the last position's logits per row and the new past.
    pub(super) fn decode(
        &mut self,
        embeds: DynValue,
        mask: &[i64],
        positions: Vec<i64>,
        past: Past,
        batch: usize,
        len: usize,
    ) -> Result<(Vec<Vec<f32>>, Past), OnnxError> {
        let (all, past) = self.decode_all(embeds, mask, positions, past, batch, len)?;
        let vocab = all.len() / (batch * len).max(1);
        let rows = (0..batch)
            .map(|b| all[(b * len + len - 1) * vocab..(b * len + len) * vocab].to_vec())
            .collect();
        Ok((rows, past))
    }

    /// One decoder call: every position's logits (`[batch, len, vocab]`, flat) and the new past.
    pub(super) fn decode_all(
        &mut self,
        embeds: DynValue,
        mask: &[i64],
        positions: Vec<i64>,
        past: Past,
        batch: usize,
        len: usize,
    ) -> Result<(Vec<f32>, Past), OnnxError> {
        let total = mask.len() / batch;
        let mut inputs: Vec<(
            std::borrow::Cow<'_, str>,
            ort::session::SessionInputValue<'_>,
        )> = vec![
            ("inputs_embeds".into(), embeds.into()),
            (
                "attention_mask".into(),
                Tensor::from_array(([batch, total], mask.to_vec()))
                    .map_err(rt)?
                    .into_dyn()
                    .into(),
            ),
        ];
        if self.decoder_inputs.iter().any(|n| n == "position_ids") {
            let value = if self.mrope {
                Tensor::from_array(([3, batch, len], positions))
            } else {
                Tensor::from_array(([batch, len], positions))
            };
            inputs.push(("position_ids".into(), value.map_err(rt)?.into_dyn().into()));
        }
        let past_len = total - len;
        if self.decoder_inputs.iter().any(|n| n == "use_cache_branch") {
            inputs.push((
                "use_cache_branch".into(),
                Tensor::from_array(([1], vec![past_len > 0]))
                    .map_err(rt)?
                    .into_dyn()
                    .into(),
            ));
        }
        for (name, v) in past {
            inputs.push((name.into(), v.into()));
        }
        let mut outputs = self.decoder.run(inputs).map_err(rt)?;
        let logits = outputs
            .remove("logits")
            .ok_or_else(|| OnnxError::Model("decoder has no logits output".into()))?;
        let all = to_f32(&logits)?;
        let mut next = Vec::with_capacity(self.cfg.layers * 2);
        for i in 0..self.cfg.layers {
            for kind in ["key", "value"] {
                let v = outputs
                    .remove(format!("present.{i}.{kind}"))
                    .ok_or_else(|| {
                        OnnxError::Model(format!("decoder has no present.{i}.{kind} output"))
                    })?;
                next.push((format!("past_key_values.{i}.{kind}"), v));
            }
        }
        Ok((all, next))
    }
}
