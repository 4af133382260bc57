//! The accessibility tree as indented text: what a screen reader would announce, in the
//! shape text-only web agents are prompted with (`role "name" value=… checked`).

use std::collections::HashMap;

use chromiumoxide::cdp::browser_protocol::accessibility::AxNode;

/// Lines past this are cut (a long page's tree would drown a prompt).
const MAX_LINES: usize = 600;

/// Roles that only group or hold text; of these only `StaticText` with text is shown.
const STRUCTURAL: &[&str] = &[
    "generic",
    "none",
    "presentation",
    "InlineTextBox",
    "LineBreak",
    "StaticText",
];

/// Renders the tree below the root, skipping ignored and unnamed structural nodes (their
/// children move up a level) and the text boxes under named nodes (the name says it).
/// Nodes of numbered elements (`numbers`: element number by backend DOM node id) start
/// with `[N]` and are always shown. `frames` holds the rendered trees of iframes by their
/// element's backend node id: each goes under its `Iframe` line, one level deeper.
pub(crate) fn render(
    nodes: &[AxNode],
    numbers: &HashMap<i64, usize>,
    frames: &HashMap<i64, String>,
) -> String {
    let by_id: HashMap<&str, &AxNode> = nodes
        .iter()
        .map(|n| (n.node_id.inner().as_str(), n))
        .collect();
    let Some(root) = nodes.iter().find(|n| n.parent_id.is_none()) else {
        return String::new();
    };
    let mut out = Vec::new();
    let mut stack = vec![(root, 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if out.len() >= MAX_LINES {
            out.push(format!("… (cut at {MAX_LINES} lines)"));
            break;
        }
        let role = text_of(node.role.as_ref());
        let name = text_of(node.name.as_ref());
        let backend = node.backend_dom_node_id.as_ref().map(|id| *id.inner());
        let number = backend.and_then(|id| numbers.get(&id));
        let shown = !role.is_empty()
            && role != "RootWebArea"
            && (number.is_some()
                || !node.ignored
                    && !(STRUCTURAL.contains(&role.as_str())
                        && (name.is_empty() || role != "StaticText")));
        let child_depth = if shown { depth + 1 } else { depth };
        if shown {
            let mut line = "  ".repeat(depth);
            if let Some(n) = number {
                line.push_str(&format!("[{n}] "));
            }
            line.push_str(&role);
            if !name.is_empty() {
                line.push_str(&format!(" {:?}", truncate(&name, 120)));
            }
            let value = text_of(node.value.as_ref());
            if !value.is_empty() {
                line.push_str(&format!(" value={:?}", truncate(&value, 80)));
            }
            for p in node.properties.iter().flatten() {
                let v = p.value.value.as_ref();
                let key = p.name.as_ref();
                match (key, v) {
                    ("checked" | "selected" | "expanded" | "pressed", Some(v)) => {
                        line.push_str(&format!(
                            " {key}={}",
                            v.as_str().map_or(v.to_string(), str::to_string)
                        ));
                    }
                    ("disabled" | "required" | "focused", Some(serde_json::Value::Bool(true))) => {
                        line.push_str(&format!(" {key}"));
                    }
                    ("level", Some(v)) => line.push_str(&format!(" level={v}")),
                    _ => {}
                }
            }
            out.push(line);
            if let Some(tree) = backend.and_then(|id| frames.get(&id)) {
                let indent = "  ".repeat(depth + 1);
                out.extend(tree.lines().map(|l| format!("{indent}{l}")));
            }
        }
        // A named leaf-ish node says its text already; its text children would repeat it.
        let skip_text_children = shown && !name.is_empty();
        let children: Vec<&AxNode> = node
            .child_ids
            .iter()
            .flatten()
            .filter_map(|id| by_id.get(id.inner().as_str()).copied())
            .filter(|c| {
                !(skip_text_children
                    && matches!(
                        text_of(c.role.as_ref()).as_str(),
                        "StaticText" | "InlineTextBox"
                    ))
            })
            .collect();
        for c in children.into_iter().rev() {
            stack.push((c, child_depth));
        }
    }
    out.join("\n")
}

fn text_of(v: Option<&chromiumoxide::cdp::browser_protocol::accessibility::AxValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        Some(serde_json::Value::String(s)) => s.trim().to_string(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, parent: Option<&str>, role: &str, name: &str, children: &[&str]) -> AxNode {
        serde_json::from_value(json!({
            "nodeId": id,
            "ignored": false,
            "role": {"type": "role", "value": role},
            "name": {"type": "computedString", "value": name},
            "parentId": parent,
            "childIds": children,
        }))
        .unwrap()
    }

    #[test]
    fn named_nodes_nest_and_structure_is_flattened() {
        let nodes = vec![
            node("1", None, "RootWebArea", "Shop", &["2"]),
            node("2", Some("1"), "generic", "", &["3", "5"]),
            node("3", Some("2"), "button", "Add to cart", &["4"]),
            node("4", Some("3"), "StaticText", "Add to cart", &[]),
            node("5", Some("2"), "list", "", &["6"]),
            node("6", Some("5"), "listitem", "", &["7"]),
            node("7", Some("6"), "StaticText", "Mug", &[]),
        ];
        let text = render(&nodes, &HashMap::new(), &HashMap::new());
        assert_eq!(
            text,
            "button \"Add to cart\"\nlist\n  listitem\n    StaticText \"Mug\""
        );
    }

    #[test]
    fn numbered_elements_are_marked_and_never_flattened_away() {
        let backed = |mut n: AxNode, backend: i64| {
            n.backend_dom_node_id =
                Some(chromiumoxide::cdp::browser_protocol::dom::BackendNodeId::new(backend));
            n
        };
        let nodes = vec![
            node("1", None, "RootWebArea", "Shop", &["2"]),
            backed(node("2", Some("1"), "generic", "", &["3", "5"]), 20),
            backed(node("3", Some("2"), "button", "Add to cart", &["4"]), 30),
            node("4", Some("3"), "StaticText", "Add to cart", &[]),
            backed(node("5", Some("2"), "generic", "", &["6"]), 50),
            node("6", Some("5"), "StaticText", "Mug", &[]),
        ];
        // The clickable div (50) is numbered; its unnumbered parent (20) stays flattened.
        let numbers = HashMap::from([(30, 1), (50, 2)]);
        assert_eq!(
            render(&nodes, &numbers, &HashMap::new()),
            "[1] button \"Add to cart\"\n[2] generic\n  StaticText \"Mug\""
        );
    }
}
