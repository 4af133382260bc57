//! Content-addressed blobs (screenshots): the key is the sha256 of the bytes, so storing
//! the same image twice costs nothing and a retried episode never duplicates one.

use sha2::{Digest, Sha256};

use super::{Store, StoreError};

/// A blob waiting to be stored with its episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Its content address.
    pub hash: String,
    /// MIME type.
    pub mime: String,
    /// Contents.
    pub bytes: Vec<u8>,
}

/// The content address of some bytes.
pub fn hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Store {
    /// Stores a blob and returns its hash.
    pub async fn put_blob(&self, bytes: &[u8], mime: &str) -> Result<String, StoreError> {
        let h = hash(bytes);
        sqlx::query("INSERT INTO blobs (hash, mime, bytes) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING")
            .bind(&h)
            .bind(mime)
            .bind(bytes)
            .execute(&self.pool)
            .await?;
        Ok(h)
    }

    /// A blob's MIME type and bytes.
    pub async fn get_blob(&self, hash: &str) -> Result<Option<(String, Vec<u8>)>, StoreError> {
        Ok(
            sqlx::query_as("SELECT mime, bytes FROM blobs WHERE hash = $1")
                .bind(hash)
                .fetch_optional(&self.pool)
                .await?,
        )
    }
}
