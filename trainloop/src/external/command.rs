//! Running the external trainer: argv without a shell, the protocol's environment, a
//! timeout that kills the command's whole process group, standard output and error
//! logged line by line (tracing) and kept in files beside the training set.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::{Dirs, ExternalError, ExternalTrainer};

/// The command's standard output, kept.
pub const STDOUT: &str = "stdout.log";
/// Its standard error, kept.
pub const STDERR: &str = "stderr.log";
/// Lines of standard error an exit error quotes.
const TAIL: usize = 12;

/// What a finished command left.
#[derive(Debug, Clone)]
pub struct Ran {
    /// Wall time.
    pub seconds: f64,
    /// Its standard output's file.
    pub stdout: PathBuf,
    /// Its standard error's file.
    pub stderr: PathBuf,
}

/// `arg` with `{input}`, `{base}` and `{output}` replaced by the directories.
pub fn substitute(arg: &str, dirs: &Dirs) -> String {
    arg.replace("{input}", &dirs.input.display().to_string())
        .replace("{base}", &dirs.base.display().to_string())
        .replace("{output}", &dirs.output.display().to_string())
}

/// Runs the trainer's command to its end. `env` comes on top of the protocol's variables
/// and the trainer's own `env`; the logs go to `logs/stdout.log` and `logs/stderr.log`.
pub async fn run(
    trainer: &ExternalTrainer,
    dirs: &Dirs,
    env: &[(String, String)],
    logs: &Path,
) -> Result<Ran, ExternalError> {
    let program = substitute(&trainer.command[0], dirs);
    let mut cmd = Command::new(&program);
    cmd.args(trainer.command[1..].iter().map(|a| substitute(a, dirs)))
        .env("SURFGYM_TRAIN_INPUT", &dirs.input)
        .env("SURFGYM_BASE_MODEL", &dirs.base)
        .env("SURFGYM_TRAIN_OUTPUT", &dirs.output)
        .envs(&trainer.env)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills what it started too.
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    tracing::info!(program = %program, input = %dirs.input.display(), "external trainer starts");
    let mut child = cmd.spawn().map_err(|source| ExternalError::Spawn {
        program: program.clone(),
        source,
    })?;
    let (out_path, err_path) = (logs.join(STDOUT), logs.join(STDERR));
    let out = tokio::spawn(pump(child.stdout.take(), out_path.clone(), false));
    let err = tokio::spawn(pump(child.stderr.take(), err_path.clone(), true));
    let status = match tokio::time::timeout(trainer.timeout(), child.wait()).await {
        Ok(status) => status.map_err(|e| ExternalError::io(Path::new(&program), e))?,
        Err(_) => {
            if let Some(pid) = child.id() {
                // SAFETY: killpg only sends a signal; the group is the child's own.
                unsafe {
                    libc::killpg(pid as libc::pid_t, libc::SIGKILL);
                }
            }
            let _ = child.wait().await;
            tracing::warn!(program = %program, seconds = trainer.timeout_s, "external trainer timed out");
            return Err(ExternalError::Timeout {
                program,
                seconds: trainer.timeout_s,
            });
        }
    };
    // A process the command left behind may hold its pipes open: the logs are read for a
    // short while more, not waited on forever.
    let grace = Duration::from_secs(5);
    let _ = tokio::time::timeout(grace, out).await;
    let tail = match tokio::time::timeout(grace, err).await {
        Ok(Ok(Ok(tail))) => tail,
        _ => VecDeque::new(),
    };
    let seconds = started.elapsed().as_secs_f64();
    if !status.success() {
        let tail: Vec<String> = tail.into_iter().collect();
        return Err(ExternalError::Exit {
            program,
            status: status.to_string(),
            tail: if tail.is_empty() {
                "(nothing)".into()
            } else {
                tail.join("\n")
            },
        });
    }
    tracing::info!(program = %program, seconds, "external trainer finished");
    Ok(Ran {
        seconds,
        stdout: out_path,
        stderr: err_path,
    })
}

/// Copies a pipe to `path` and to the log, line by line; returns its last lines.
async fn pump(
    pipe: Option<impl AsyncRead + Unpin>,
    path: PathBuf,
    stderr: bool,
) -> std::io::Result<VecDeque<String>> {
    let mut tail = VecDeque::with_capacity(TAIL);
    let mut file = tokio::fs::File::create(&path).await?;
    let Some(pipe) = pipe else {
        return Ok(tail);
    };
    // Bytes, not UTF-8 lines: a trainer's progress bars and odd bytes must not end the log.
    let mut lines = BufReader::new(pipe).split(b'\n');
    while let Some(bytes) = lines.next_segment().await? {
        let line = String::from_utf8_lossy(&bytes).into_owned();
        if stderr {
            tracing::info!(target: "external_trainer", stream = "stderr", "{line}");
        } else {
            tracing::info!(target: "external_trainer", stream = "stdout", "{line}");
        }
        file.write_all(line.as_bytes()).await?;
        file.write_all(b"\n").await?;
        if tail.len() == TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
    file.flush().await?;
    Ok(tail)
}
