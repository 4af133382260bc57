//! Throwaway: how fast does the tiny model learn "click the button labelled X"?
#![allow(dead_code)]
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use candle_core::Device;
use ort::session::Session;
use ort::value::Tensor as OrtTensor;
use training::{AdamWConfig, Sample, TrainConfig, Trainer};

mod common;

static ENV: OnceLock<ort::environment::Environment> = OnceLock::new();
fn session(path: &Path) -> Session {
    let env = ENV.get_or_init(|| ort::init_from(common::ort_dylib()).unwrap().build().unwrap());
    Session::builder(env).unwrap().commit_from_file(path).unwrap()
}

const LABELS: [&str; 8] = ["red", "blue", "green", "gold", "pink", "gray", "teal", "plum"];

fn instance(rnd: &mut impl FnMut() -> u64, k: usize) -> (String, usize) {
    let mut labels: Vec<&str> = LABELS.to_vec();
    for i in (1..labels.len()).rev() {
        labels.swap(i, (rnd() % (i as u64 + 1)) as usize);
    }
    let mut shown: Vec<&str> = labels[..k].to_vec();
    if std::env::var("FIXED").is_ok() { shown.sort_by_key(|l| LABELS.iter().position(|x| x == l)); }
    let target = (rnd() % k as u64) as usize;
    let mut text = String::from("You are a web agent. Complete the task by acting in the browser, one action per turn.\n");
    text += &format!("Task: Click the button labelled {}.\n", shown[target]);
    text += "Current page: \"Buttons\" (http://127.0.0.1:8000/buttons)\nInteractive elements:\n";
    for (i, l) in shown.iter().enumerate() {
        let id = if std::env::var("FIXED").is_ok() { LABELS.iter().position(|x| x == l).unwrap() + 1 } else { i + 1 };
        text += &format!("[{}] button {:?}\n", id, l);
    }
    text += "Actions (N is an element number): click(N), type(N, \"text\"), select(N, \"option\"), press(\"Enter\"), scroll(down), scroll(up), goto(\"url\"), back(), answer(\"text\"), stop()\n";
    text += "Think briefly, then end with one line: Action: <one action>";
    let n = if std::env::var("FIXED").is_ok() { LABELS.iter().position(|x| *x == shown[target]).unwrap() + 1 } else { target + 1 };
    (format!("<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\nAction: "), n)
}

#[test]
#[ignore]
fn experiment() {
    let dir = common::model("tiny-text");
    let tok = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    let mut embed = session(&dir.join("onnx/embed_tokens.onnx"));
    let mut make = |prompt: &str, n: usize| -> Sample {
        let p = tok.encode(prompt, false).unwrap().get_ids().to_vec();
        let r = tok.encode(format!("click({n})").as_str(), false).unwrap().get_ids().to_vec();
        let ids: Vec<i64> = p.iter().chain(&r).map(|t| *t as i64).collect();
        let len = ids.len();
        let out = embed.run(ort::inputs!["input_ids" => OrtTensor::from_array(([1, len], ids)).unwrap()]).unwrap();
        let e = out[0].try_extract_tensor::<f32>().unwrap().1.to_vec();
        Sample { embeds: e, positions: (0..len as i64).map(|i| [i; 3]).collect(), prompt_len: p.len(), response: r, behaviour_logprobs: vec![], allowed: None, advantage: 1.0 }
    };
    let k = 4;
    let mut rnd = common::lcg(1);
    let train: Vec<(Sample, usize, String)> = (0..256).map(|_| { let (p, n) = instance(&mut rnd, k); (make(&p, n), n, p) }).collect();
    eprintln!("prompt tokens {}", train[0].0.prompt_len);
    let test: Vec<(String, usize)> = (0..64).map(|_| instance(&mut rnd, k)).collect();
    let test_samples: Vec<Vec<Sample>> = test.iter().map(|(p, _)| (1..=8).map(|n| make(p, n)).collect()).collect();
    let cfg = TrainConfig { micro_batch: 16, optimizer: AdamWConfig { lr: std::env::var("LR").map(|v| v.parse().unwrap()).unwrap_or(3e-3), ..AdamWConfig::default() }, ..TrainConfig::default() };
    let mut t = Trainer::load(&dir, cfg, &Device::Cpu).unwrap();
    let acc = |t: &Trainer| {
        let mut ok = 0;
        for (cands, (_, n)) in test_samples.iter().zip(&test) {
            let lps = t.logprobs(cands).unwrap();
            let best = lps.iter().enumerate().max_by(|a, b| a.1.iter().sum::<f32>().total_cmp(&b.1.iter().sum::<f32>())).unwrap().0 + 1;
            ok += usize::from(best == *n);
        }
        ok as f64 / test.len() as f64
    };
    eprintln!("before: {}", acc(&t));
    let start = Instant::now();
    let samples: Vec<Sample> = train.iter().map(|x| x.0.clone()).collect();
    for round in 0..40 {
        let r = t.update(&samples, &mut |_, _, _| {}).unwrap();
        eprintln!("round {round} loss {:.3} t {:.1}s tok/s {:.0} acc {}", r.last_loss, start.elapsed().as_secs_f64(), r.tokens_per_s, acc(&t));
    }
}
