//! API tokens: created with a random secret that is shown once, stored as its SHA-256
//! (a database dump holds nothing that authenticates), revocable, with the time each was
//! last used.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{Store, StoreError};

/// What every token starts with, so that one pasted into a log or a chat is recognisable.
pub const TOKEN_PREFIX: &str = "sgt_";
/// How much of a token is kept in clear to tell tokens apart (the marker and 8 characters
/// of the secret: 48 bits, far from enough to guess the other 208).
const SHOWN: usize = TOKEN_PREFIX.len() + 8;
/// `last_used_at` is written at most this often per token, so that reads stay reads.
const LAST_USED_EVERY_SECS: i64 = 60;

/// What a token may do. Ordered: `Admin` > `Write` > `Read`, each allowing what the ones
/// below it allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Every GET.
    Read,
    /// Reads and every write (tasks, campaigns, imports, pause / resume / cancel).
    Write,
    /// Everything, token management included.
    Admin,
}

impl Scope {
    /// The name used in the CLI, the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;

    fn from_str(s: &str) -> Result<Scope, String> {
        match s {
            "read" => Ok(Scope::Read),
            "write" => Ok(Scope::Write),
            "admin" => Ok(Scope::Admin),
            other => Err(format!(
                "unknown scope `{other}` (expected read, write or admin)"
            )),
        }
    }
}

/// A stored token as it is listed: never its secret.
#[derive(Debug, Clone, Serialize)]
pub struct TokenView {
    /// Identifier (what `revoke` takes).
    pub id: Uuid,
    /// A label chosen when it was created.
    pub name: String,
    /// What it may do.
    pub scope: Scope,
    /// Its first characters, to recognise it.
    pub prefix: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last used to authenticate a request (to the minute).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Revoked (it authenticates nothing since).
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(sqlx::FromRow)]
struct TokenRow {
    id: Uuid,
    name: String,
    scope: String,
    prefix: String,
    created_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
}

impl TryFrom<TokenRow> for TokenView {
    type Error = StoreError;

    fn try_from(r: TokenRow) -> Result<TokenView, StoreError> {
        Ok(TokenView {
            id: r.id,
            scope: r.scope.parse().map_err(StoreError::Corrupt)?,
            name: r.name,
            prefix: r.prefix,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        })
    }
}

const COLUMNS: &str = "id, name, scope, prefix, created_at, last_used_at, revoked_at";

/// A fresh secret: 32 random bytes from the thread's CSPRNG (seeded by the OS), URL-safe.
fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

fn digest(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

impl Store {
    /// Creates a token; returns it and its secret, which is stored nowhere.
    pub async fn create_token(
        &self,
        scope: Scope,
        name: &str,
    ) -> Result<(TokenView, String), StoreError> {
        let secret = new_secret();
        let row: TokenRow = sqlx::query_as(&format!(
            "INSERT INTO api_tokens (id, name, scope, prefix, hash) VALUES ($1, $2, $3, $4, $5) \
             RETURNING {COLUMNS}"
        ))
        .bind(Uuid::new_v4())
        .bind(name)
        .bind(scope.as_str())
        .bind(&secret[..SHOWN])
        .bind(digest(&secret))
        .fetch_one(self.pool())
        .await?;
        Ok((row.try_into()?, secret))
    }

    /// Every token, newest first, revoked ones included.
    pub async fn list_tokens(&self) -> Result<Vec<TokenView>, StoreError> {
        let rows: Vec<TokenRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM api_tokens ORDER BY created_at DESC, id"
        ))
        .fetch_all(self.pool())
        .await?;
        rows.into_iter().map(TryInto::try_into).collect()
    }

    /// Revokes the token with this id, or with this prefix when exactly one token has it.
    /// `None`: no such token. Revoking a revoked token keeps its first revocation time.
    pub async fn revoke_token(&self, id_or_prefix: &str) -> Result<Option<TokenView>, StoreError> {
        let id = match Uuid::parse_str(id_or_prefix) {
            Ok(id) => id,
            Err(_) => {
                let matching: Vec<(Uuid,)> =
                    sqlx::query_as("SELECT id FROM api_tokens WHERE prefix = $1")
                        .bind(id_or_prefix)
                        .fetch_all(self.pool())
                        .await?;
                match matching.as_slice() {
                    [] => return Ok(None),
                    [(id,)] => *id,
                    _ => {
                        return Err(StoreError::Conflict(format!(
                            "{} tokens start with `{id_or_prefix}`: revoke by id",
                            matching.len()
                        )));
                    }
                }
            }
        };
        let row: Option<TokenRow> = sqlx::query_as(&format!(
            "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) \
             WHERE id = $1 RETURNING {COLUMNS}"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        row.map(TryInto::try_into).transpose()
    }

    /// The live (unrevoked) token whose secret this is, noting that it was used; `None`
    /// when there is none.
    pub async fn authenticate_token(&self, secret: &str) -> Result<Option<TokenView>, StoreError> {
        let row: Option<TokenRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL"
        ))
        .bind(digest(secret))
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        let stale = row
            .last_used_at
            .is_none_or(|t| (Utc::now() - t).num_seconds() >= LAST_USED_EVERY_SECS);
        if stale {
            sqlx::query("UPDATE api_tokens SET last_used_at = now() WHERE id = $1")
                .bind(row.id)
                .execute(self.pool())
                .await?;
        }
        row.try_into().map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_random_and_marked() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX));
        // 32 bytes in unpadded base64: 43 characters.
        assert_eq!(a.len(), TOKEN_PREFIX.len() + 43);
        assert_eq!(digest(&a).len(), 32);
    }

    #[test]
    fn scopes_are_ordered_and_parse_their_names() {
        assert!(Scope::Admin > Scope::Write && Scope::Write > Scope::Read);
        for s in [Scope::Read, Scope::Write, Scope::Admin] {
            assert_eq!(s.as_str().parse::<Scope>(), Ok(s));
        }
        assert!(
            "root"
                .parse::<Scope>()
                .unwrap_err()
                .contains("read, write or admin")
        );
    }
}
