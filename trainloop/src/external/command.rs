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
    let mut group = Group(child.id());
    let (out_path, err_path) = (logs.join(STDOUT), logs.join(STDERR));
    let out = tokio::spawn(pump(child.stdout.take(), out_path.clone(), false));
    let err = tokio::spawn(pump(child.stderr.take(), err_path.clone(), true));
    let status = match tokio::time::timeout(trainer.timeout(), child.wait()).await {
        Ok(status) => {
            group.0 = None;
            status.map_err(|e| ExternalError::io(Path::new(&program), e))?
        }
        Err(_) => {
            group.kill();
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

/// The command's process group while it runs. Killed whole when the command times out,
/// and when this is dropped before the command ended: a cancelled run drops the future
/// that runs the command, and `kill_on_drop` alone would kill only the direct child,
/// leaving what it started (a launcher's workers, a GPU job) running.
struct Group(Option<u32>);

impl Group {
    fn kill(&mut self) {
        if let Some(pid) = self.0.take() {
            // SAFETY: killpg only sends a signal; the group is the child's own (spawned
            // with `process_group(0)`, so its id is the child's pid).
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn trainer(script: &str, timeout_s: u64) -> ExternalTrainer {
        ExternalTrainer {
            command: vec![
                "sh".into(),
                "-c".into(),
                script.into(),
                "trainer".into(),
                "{output}".into(),
            ],
            format: Default::default(),
            returns: Default::default(),
            timeout_s,
            env: [("EXTRA".to_string(), "yes".to_string())].into(),
        }
    }

    fn dirs(root: &Path) -> Dirs {
        Dirs {
            input: root.join("in"),
            base: root.join("base"),
            output: root.join("out"),
        }
    }

    #[tokio::test]
    async fn the_command_gets_the_protocol_and_its_output_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let t = trainer(
            r#"echo "input=$SURFGYM_TRAIN_INPUT base=$SURFGYM_BASE_MODEL arg=$1 extra=$EXTRA it=$SURFGYM_ITERATION"; printf 'bad \377 byte\n' >&2"#,
            30,
        );
        let d = dirs(tmp.path());
        let env = [("SURFGYM_ITERATION".to_string(), "3".to_string())];
        let ran = run(&t, &d, &env, tmp.path()).await.unwrap();
        let out = std::fs::read_to_string(&ran.stdout).unwrap();
        assert_eq!(
            out.trim(),
            format!(
                "input={} base={} arg={} extra=yes it=3",
                d.input.display(),
                d.base.display(),
                d.output.display()
            )
        );
        assert!(
            std::fs::read_to_string(&ran.stderr)
                .unwrap()
                .contains("bad \u{fffd} byte")
        );
    }

    #[tokio::test]
    async fn a_failing_command_says_how_it_ended_and_quotes_its_stderr() {
        let tmp = tempfile::tempdir().unwrap();
        let t = trainer("echo 'CUDA out of memory' >&2; exit 3", 30);
        let e = run(&t, &dirs(tmp.path()), &[], tmp.path())
            .await
            .unwrap_err();
        let m = e.to_string();
        assert!(matches!(e, ExternalError::Exit { .. }), "{m}");
        assert!(
            m.contains("exit status: 3") && m.contains("CUDA out of memory"),
            "{m}"
        );
        let missing = ExternalTrainer {
            command: vec!["/no/such/trainer".into()],
            ..trainer("", 30)
        };
        let e = run(&missing, &dirs(tmp.path()), &[], tmp.path())
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("cannot start \"/no/such/trainer\""),
            "{e}"
        );
    }

    /// Neither dead nor a zombie nobody reaped (a container's init may not).
    fn running(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
    }

    #[tokio::test]
    async fn a_command_past_its_timeout_is_killed_with_what_it_started() {
        let tmp = tempfile::tempdir().unwrap();
        let pid_file = tmp.path().join("pid");
        // A grandchild holding the pipes open: killed with the group, not waited for.
        let script = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let e = run(&trainer(&script, 1), &dirs(tmp.path()), &[], tmp.path())
            .await
            .unwrap_err();
        assert!(
            matches!(e, ExternalError::Timeout { seconds: 1, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("trainer.timeout_s"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !running(pid),
            "the trainer's own child {pid} outlived the timeout"
        );
    }

    #[tokio::test]
    async fn a_cancelled_command_is_killed_with_what_it_started() {
        let tmp = tempfile::tempdir().unwrap();
        let pid_file = tmp.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let t = trainer(&script, 600);
        let d = dirs(tmp.path());
        // A cancelled run drops the future that runs the command.
        let cut =
            tokio::time::timeout(Duration::from_millis(1500), run(&t, &d, &[], tmp.path())).await;
        assert!(cut.is_err(), "the command should still have been running");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !running(pid),
            "the trainer's own child {pid} outlived the cancel"
        );
    }
}
