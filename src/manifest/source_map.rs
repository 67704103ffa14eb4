//! Finds the line of a field path (`toolkit.run[3]`) in manifest text, so semantic problems can
//! point at a line as parse errors do. Block-style YAML only (what manifests use); a path it
//! cannot place falls back to its nearest parent, and at worst to no line at all.

use std::collections::HashMap;

/// Field path → 1-based line, built once per manifest text.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    lines: HashMap<String, usize>,
}

impl SourceMap {
    /// Indexes every `key:` of a block-style YAML text by its dotted path.
    pub fn new(text: &str) -> Self {
        let mut lines = HashMap::new();
        // (indent, path) of the enclosing keys.
        let mut stack: Vec<(usize, String)> = Vec::new();
        // Per parent path: how many `- ` items were seen, for `[n]` paths.
        let mut items: HashMap<String, usize> = HashMap::new();
        for (number, raw) in text.lines().enumerate() {
            let content = raw.split(" #").next().unwrap_or(raw);
            let trimmed = content.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let mut indent = content.len() - trimmed.len();
            let mut body = trimmed;
            let mut item_path = None;
            if let Some(rest) = body.strip_prefix("- ") {
                while stack.last().is_some_and(|(i, _)| *i > indent) {
                    stack.pop();
                }
                let parent = stack.last().map(|(_, p)| p.clone()).unwrap_or_default();
                let n = items.entry(parent.clone()).or_insert(0);
                let path = format!("{parent}[{n}]");
                *n += 1;
                lines.entry(path.clone()).or_insert(number + 1);
                // The item sits between its list and its keys, so sibling keys find it.
                stack.push((indent + 1, path.clone()));
                item_path = Some(path);
                indent += 2;
                body = rest;
            }
            let Some((key, _)) = body.split_once(':') else {
                continue;
            };
            let key = key.trim().trim_matches('"');
            if key.is_empty() || key.contains(' ') || key.starts_with('{') {
                continue;
            }
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
            let parent = item_path
                .or_else(|| stack.last().map(|(_, p)| p.clone()))
                .unwrap_or_default();
            let path = if parent.is_empty() {
                key.to_string()
            } else {
                format!("{parent}.{key}")
            };
            lines.entry(path.clone()).or_insert(number + 1);
            stack.push((indent, path));
        }
        Self { lines }
    }

    /// The line of `path`, or of its nearest parent that has one.
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut candidate = path.to_string();
        loop {
            if let Some(line) = self.lines.get(&candidate) {
                return Some(*line);
            }
            let cut = candidate.rfind(['.', '['])?;
            candidate.truncate(cut);
            if candidate.is_empty() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "schema: 1\nname: x\ndriver:\n  version: \"1\"\n  installer:\n    url: https://a/b\n  run: [\"sh\", \"{installer}\"]\nlibrary:\n  installers:\n    - url: https://a/c\n    - url: https://a/d\n      sha256: null\n";

    #[test]
    fn nested_keys_and_list_items_have_lines() {
        let map = SourceMap::new(TEXT);
        assert_eq!(map.line_of("driver.version"), Some(4));
        assert_eq!(map.line_of("driver.installer.url"), Some(6));
        assert_eq!(map.line_of("driver.run[1]"), Some(7));
        assert_eq!(map.line_of("library.installers[1].sha256"), Some(12));
        assert_eq!(map.line_of("library.installers[1].url"), Some(11));
        assert_eq!(map.line_of("missing"), None);
    }
}
