//! One training sample: a step exactly as the policy saw it and what it sampled.
//!
//! The decoder's inputs are stored as the frozen parts of the model made them (token
//! embeddings and the vision encoder's features, from ONNX Runtime), so the trainer never
//! re-renders or re-tokenises anything: the response is the stored token ids.

use inference::TokenSet;

use crate::TrainError;

/// One step's decoder inputs and sampled response.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Input embeddings of prompt then response, `[len, hidden]` row-major.
    pub embeds: Vec<f32>,
    /// Each token's position `[t, h, w]` (equal for models without M-RoPE).
    pub positions: Vec<[i64; 3]>,
    /// Tokens of the prompt (the response starts after them).
    pub prompt_len: usize,
    /// The sampled response's token ids, as stored.
    pub response: Vec<u32>,
    /// Their log-probabilities under the policy that sampled them (empty if unknown).
    pub behaviour_logprobs: Vec<f32>,
    /// Constrained decoding: the tokens the grammar allowed at each response position.
    pub allowed: Option<Vec<TokenSet>>,
    /// The objective's weight for this step: the advantage for GRPO, 1 for behaviour cloning.
    pub advantage: f32,
}

impl Sample {
    /// A sample from the decoder inputs the frozen parts of the model made for a step
    /// (`inference::Model::teacher_inputs`) and what the policy sampled there.
    pub fn from_teacher(
        t: inference::TeacherInputs,
        response: Vec<u32>,
        behaviour_logprobs: Vec<f32>,
        advantage: f32,
    ) -> Sample {
        Sample {
            embeds: t.embeds,
            positions: t.positions,
            prompt_len: t.prompt_len,
            response,
            behaviour_logprobs,
            allowed: t.allowed,
            advantage,
        }
    }

    /// Tokens in all.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the sample holds no token.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Checks the sample against the decoder's width and vocabulary.
    pub fn validate(&self, hidden: usize, vocab: usize) -> Result<(), TrainError> {
        let bad = |why: String| Err(TrainError::Input(format!("sample: {why}")));
        let len = self.positions.len();
        if self.prompt_len == 0 {
            return bad("the prompt is empty".into());
        }
        if self.response.is_empty() {
            return bad("the response is empty".into());
        }
        if len != self.prompt_len + self.response.len() {
            return bad(format!(
                "{len} positions for {} prompt and {} response tokens",
                self.prompt_len,
                self.response.len()
            ));
        }
        if self.embeds.len() != len * hidden {
            return bad(format!(
                "{} embedding values for {len} tokens of width {hidden}",
                self.embeds.len()
            ));
        }
        if let Some(t) = self.response.iter().find(|t| **t as usize >= vocab) {
            return bad(format!(
                "response token {t} is outside the vocabulary ({vocab})"
            ));
        }
        if !self.behaviour_logprobs.is_empty()
            && self.behaviour_logprobs.len() != self.response.len()
        {
            return bad(format!(
                "{} behaviour log-probabilities for {} response tokens",
                self.behaviour_logprobs.len(),
                self.response.len()
            ));
        }
        if let Some(allowed) = &self.allowed {
            if allowed.len() != self.response.len() {
                return bad(format!(
                    "{} grammar masks for {} response tokens",
                    allowed.len(),
                    self.response.len()
                ));
            }
            if let Some(j) =
                (0..allowed.len()).find(|j| !allowed[*j].contains(self.response[*j] as usize))
            {
                return bad(format!(
                    "response token {j} is not allowed by its grammar mask"
                ));
            }
        }
        if !self.advantage.is_finite() {
            return bad("the advantage is not finite".into());
        }
        Ok(())
    }
}
