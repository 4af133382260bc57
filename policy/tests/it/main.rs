//! The policies' integration tests, one binary: the batching queue and the HTTP policy
//! against a real local server speaking the OpenAI chat protocol.

mod batcher;
mod http;
