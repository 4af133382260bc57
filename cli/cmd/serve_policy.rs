//! `surfgym serve-policy`: the ONNX policy as an OpenAI-compatible
//! `/v1/chat/completions` endpoint, batched as the rollouts batch it.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use policy::onnx;

use crate::args::Common;

/// `surfgym serve-policy`.
#[derive(Args)]
pub struct ServePolicyArgs {
    /// The ONNX model directory to serve, or a version link (`surfgym train step
    /// --promote LINK`): then each version the link is moved to is served from the next
    /// batch on, once it has loaded (a version that fails to load is refused and the one
    /// in use keeps serving).
    #[arg(long)]
    pub model: PathBuf,
    /// The name it is listed under.
    #[arg(long, default_value = "surfgym-onnx")]
    pub name: String,
    /// Address to serve on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Port (0: a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Lets clients load model directories inside DIR under new names at run time
    /// (`POST /v1/load_lora_adapter` with `lora_name` and `lora_path`, as vLLM's; `POST
    /// /v1/unload_lora_adapter`): how an external trainer hands a training run its next
    /// version. A PEFT LoRA directory (`adapter_config.json`) is merged over the served
    /// model's base. Off without it.
    #[arg(long, value_name = "DIR")]
    pub load_root: Option<PathBuf>,
}

/// `surfgym serve-policy`.
pub async fn serve_policy(common: &Common, args: ServePolicyArgs) -> anyhow::Result<ExitCode> {
    let opts = common.models.onnx_options(common, args.model.clone())?;
    let link = if inference::version_link::is_link(&args.model) {
        Some(
            inference::version_link::VersionLink::new(&args.model)
                .with_context(|| format!("--model {}", args.model.display()))?,
        )
    } else {
        None
    };
    let backend = onnx::OnnxBackend::load(opts.clone())
        .with_context(|| format!("loading {}", args.model.display()))?;
    let (provider, fallback) = backend.provider();
    let listener = tokio::net::TcpListener::bind((args.bind, args.port)).await?;
    println!(
        "serving {} on {provider}{} at http://{}/v1/chat/completions",
        args.model.display(),
        fallback.map(|f| format!(" ({f})")).unwrap_or_default(),
        listener.local_addr()?
    );
    let batching = inference::server::Batching {
        max_batch: common.models.max_batch.max(1),
        max_wait: Duration::from_millis(common.models.max_wait_ms),
        ..Default::default()
    };
    let mut server = inference::server::PolicyServer::start(backend.model(), args.name, batching)?;
    if let Some(root) = &args.load_root {
        let o = opts.clone();
        // A PEFT LoRA directory goes over the served model's base.
        let base = inference::version::base_of(&opts.model_dir)
            .with_context(|| format!("--model {}: its base model", opts.model_dir.display()))?;
        let load: inference::server::ModelLoader = std::sync::Arc::new(move |dir| {
            let mut m = match dir.join(inference::peft::CONFIG).is_file() {
                true => inference::Model::load_peft(&base, dir, &o.dylib, o.device, o.threads),
                false => inference::Model::load(dir, &o.dylib, o.device, o.threads),
            }
            .map_err(|e| e.to_string())?;
            m.set_prefix_cache(o.prefix_cache_bytes);
            Ok(m)
        });
        server = server
            .with_loading(root, load)
            .with_context(|| format!("--load-root {}", root.display()))?;
        println!("models inside {} may be loaded at run time", root.display());
    }
    if let Some(link) = link {
        tokio::spawn(follow(link, server.clone(), opts));
    }
    let app = inference::server::router(server);
    let server = tokio::spawn(async move { axum_serve(listener, app).await });
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        r = server => { r??; }
    }
    Ok(ExitCode::SUCCESS)
}

/// How often a version link is looked at.
const LINK_POLL: Duration = Duration::from_secs(1);

/// Serves each version the link is moved to, once it has loaded.
async fn follow(
    mut link: inference::version_link::VersionLink,
    server: inference::server::PolicyServer,
    opts: onnx::OnnxOptions,
) {
    loop {
        tokio::time::sleep(LINK_POLL).await;
        let Some(dir) = link.moved() else {
            continue;
        };
        let o = opts.clone();
        let d = dir.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            let mut m = inference::Model::load(&d, &o.dylib, o.device, o.threads)
                .map_err(|e| e.to_string())?;
            m.set_prefix_cache(o.prefix_cache_bytes);
            Ok(m)
        })
        .await
        .unwrap_or_else(|e| Err(format!("loading thread failed: {e}")));
        match loaded.and_then(|m| server.replace_model(m, dir.clone())) {
            Ok(()) => {
                tracing::info!(version = %dir.display(), "serving the promoted policy version")
            }
            Err(why) => tracing::error!(
                version = %dir.display(),
                error = %why,
                serving = %server.serving().display(),
                "the promoted policy version cannot be loaded; the one in use keeps serving"
            ),
        }
    }
}

async fn axum_serve(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    axum::serve(listener, app).await
}
