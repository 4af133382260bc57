//! The recorded accessibility tree's size bound. Pages are hostile: a page can render a
//! tree of megabytes, and every step would store it again; the replay needs the page's
//! shape, not all of it.

/// At most this many bytes of a step's tree are stored (64 KiB), then a marker.
pub const AX_TREE_LIMIT: usize = 64 * 1024;

/// The tree as stored: itself when within [`AX_TREE_LIMIT`] bytes, else its first bytes up
/// to a character boundary followed by a line saying how long it was.
pub fn bounded(tree: &str) -> String {
    if tree.len() <= AX_TREE_LIMIT {
        return tree.to_string();
    }
    let end = tree.floor_char_boundary(AX_TREE_LIMIT);
    format!(
        "{}\n… [accessibility tree truncated: {} of {} bytes stored]",
        &tree[..end],
        end,
        tree.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_tree_is_kept_whole() {
        assert_eq!(bounded("[3] button \"Buy\""), "[3] button \"Buy\"");
    }

    #[test]
    fn a_large_tree_is_cut_on_a_char_boundary_with_a_marker() {
        // 3-byte characters, so the limit falls inside one.
        let tree = "€".repeat(AX_TREE_LIMIT);
        let b = bounded(&tree);
        let (head, marker) = b.split_once('\n').unwrap();
        assert!(head.len() <= AX_TREE_LIMIT && head.len() > AX_TREE_LIMIT - 3);
        assert!(head.chars().all(|c| c == '€'));
        assert!(marker.contains("truncated"), "{marker}");
        assert!(marker.contains(&tree.len().to_string()), "{marker}");
    }
}
