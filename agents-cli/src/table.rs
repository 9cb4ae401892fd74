//! Plain-text tables for the terminal. Every cell is escaped with [`crate::term::esc`] as it
//! is added, so no column can hold a character that hides, moves or reorders text.

/// A table with a header row; columns are padded to the widest cell.
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    min_widths: Vec<usize>,
}

impl Table {
    pub(crate) fn new<I: IntoIterator<Item = S>, S: Into<String>>(header: I) -> Self {
        Table { header: header.into_iter().map(|h| cell(h.into())).collect(), rows: Vec::new(), min_widths: Vec::new() }
    }

    /// Pads columns to at least these widths (for a table printed in pages).
    pub(crate) fn set_min_widths(&mut self, widths: &[usize]) {
        self.min_widths = widths.to_vec();
    }

    pub(crate) fn row<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, cells: I) {
        self.rows.push(cells.into_iter().map(|c| cell(c.into())).collect());
    }

    pub(crate) fn render(&self) -> String {
        let cols = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for (w, m) in widths.iter_mut().zip(&self.min_widths) {
            *w = (*w).max(*m);
        }
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut s = String::new();
            for (i, w) in widths.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                if i + 1 == cols {
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(w - c.chars().count() + 2));
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&self.header, &mut out);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        line(&rule, &mut out);
        for r in &self.rows {
            line(r, &mut out);
        }
        out
    }
}

fn cell(text: String) -> String {
    match crate::term::esc(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// Shortens text to `max` characters, marking the cut with `…`. Nothing is replaced: the
/// table (or [`crate::term::esc`] at the print site) escapes what the text holds.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}
