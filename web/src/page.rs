//! Pagination shared by the list endpoints.

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, field};

/// The most items one page may hold.
pub const MAX_LIMIT: i64 = 500;

/// `limit` and `offset` as given: the whole query of a list without filters; lists with
/// filters declare these two among their own parameters (a query struct that denies
/// unknown parameters cannot share them by flattening).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Items per page (default 50).
    pub limit: Option<i64>,
    /// Items to skip.
    pub offset: Option<i64>,
}

impl PageQuery {
    /// Checked (limit, offset).
    pub fn checked(self) -> Result<(i64, i64), ApiError> {
        let limit = self.limit.unwrap_or(50);
        let offset = self.offset.unwrap_or(0);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(field("limit", format!("must be between 1 and {MAX_LIMIT}")));
        }
        if offset < 0 {
            return Err(field("offset", "must not be negative"));
        }
        Ok((limit, offset))
    }
}

/// A page of items.
#[derive(Debug, Serialize)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Items matching in all.
    pub total: i64,
    /// Page size.
    pub limit: i64,
    /// Items skipped.
    pub offset: i64,
}
