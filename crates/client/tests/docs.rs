//! The client snippets in docs/CLUSTER.md are the crate's doc examples (which run as
//! doctests against an in-process cluster), so they cannot rot: each `rust` block
//! there must be the visible lines of one example in the crate's sources.

/// The ```rust blocks of a Markdown file, or the doc examples (``` blocks in `//!` or
/// `///` comments) of a source file, without rustdoc's hidden `# ` lines.
fn blocks(text: &str, doc_comments: bool) -> Vec<Vec<String>> {
    let mut out = vec![];
    let mut cur: Option<Vec<String>> = None;
    for line in text.lines() {
        let line = if doc_comments {
            let t = line.trim_start();
            match t.strip_prefix("//!").or_else(|| t.strip_prefix("///")) {
                Some(rest) => rest.strip_prefix(' ').unwrap_or(rest),
                None => continue,
            }
        } else {
            line
        };
        match &mut cur {
            None if line.starts_with("```rust") || (doc_comments && line == "```") => cur = Some(vec![]),
            Some(_) if line == "```" => out.push(cur.take().unwrap()),
            Some(_) if line.starts_with("# ") || line == "#" => {}
            Some(b) => b.push(line.to_string()),
            None => {}
        }
    }
    out
}

#[test]
fn every_client_snippet_in_cluster_md_is_a_doc_example() {
    let md = include_str!("../../../docs/CLUSTER.md");
    let examples: Vec<Vec<String>> = [include_str!("../src/lib.rs"), include_str!("../src/local.rs")]
        .iter()
        .flat_map(|s| blocks(s, true))
        .collect();
    let snippets = blocks(md, false);
    assert!(snippets.len() >= 3, "CLUSTER.md's client snippets: {snippets:?}");
    for s in snippets {
        assert!(
            examples.contains(&s),
            "this CLUSTER.md snippet is no doc example of meridian-client (copy it from src/lib.rs, or add it there):\n{}",
            s.join("\n")
        );
    }
}
