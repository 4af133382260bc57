//! `surfgym token ...`: API tokens, straight in the database (no server needed): create
//! (the secret is printed once), list, revoke.

use std::process::ExitCode;

use store::{Scope, TokenView};

use crate::args::Common;
use crate::db;

/// `surfgym token ...`.
#[derive(clap::Subcommand)]
pub enum TokenCommand {
    /// Create a token and print its secret (shown only this once).
    Create {
        /// What it may do: read (every GET), write (reads and every write) or admin
        /// (everything, token management included).
        #[arg(long, value_parser = parse_scope)]
        scope: Scope,
        /// A label to recognise it by in `surfgym token list`.
        #[arg(long, default_value = "")]
        name: String,
    },
    /// List tokens (never their secrets), newest first.
    List,
    /// Revoke a token by its id (or its prefix, when only one token has it).
    Revoke {
        /// Token id or prefix, as `surfgym token list` shows them.
        id: String,
    },
}

fn parse_scope(s: &str) -> Result<Scope, String> {
    s.parse()
}

fn when(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map_or_else(|| "-".into(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

fn row(t: &TokenView) -> String {
    format!(
        "{}  {:<16} {:<6} {:<20} created {}  last used {}{}",
        t.id,
        t.prefix,
        t.scope,
        if t.name.is_empty() { "-" } else { &t.name },
        when(Some(t.created_at)),
        when(t.last_used_at),
        t.revoked_at
            .map(|r| format!("  REVOKED {}", when(Some(r))))
            .unwrap_or_default()
    )
}

/// `surfgym token ...`.
pub async fn run(common: &Common, cmd: TokenCommand) -> anyhow::Result<ExitCode> {
    let db = db::open(common).await?;
    let store = &db.store;
    match cmd {
        TokenCommand::Create { scope, name } => {
            let (view, secret) = store.create_token(scope, &name).await?;
            // The secret alone on stdout, so that `$(surfgym token create ...)` captures it.
            println!("{secret}");
            eprintln!(
                "created token {} ({}, scope {}); its secret above is shown only now: send it \
                 as `Authorization: Bearer <token>`, or paste it into the dashboard's /signin",
                view.id, view.prefix, view.scope
            );
        }
        TokenCommand::List => {
            let tokens = store.list_tokens().await?;
            if tokens.is_empty() {
                println!("no tokens (create one with `surfgym token create --scope write`)");
            }
            for t in &tokens {
                println!("{}", row(t));
            }
        }
        TokenCommand::Revoke { id } => match store.revoke_token(&id).await? {
            Some(t) => println!("revoked {}", row(&t)),
            None => {
                eprintln!("error: no token `{id}` (see `surfgym token list`)");
                return Ok(ExitCode::FAILURE);
            }
        },
    }
    Ok(ExitCode::SUCCESS)
}
