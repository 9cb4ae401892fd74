//! Plain-text tables for the terminal.

/// A table with a header row; columns are padded to the widest cell.
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    min_widths: Vec<usize>,
}

impl Table {
    pub(crate) fn new<I: IntoIterator<Item = S>, S: Into<String>>(header: I) -> Self {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new(), min_widths: Vec::new() }
    }

    /// Pads columns to at least these widths (for a table printed in pages).
    pub(crate) fn set_min_widths(&mut self, widths: &[usize]) {
        self.min_widths = widths.to_vec();
    }

    pub(crate) fn row<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, cells: I) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
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

/// Shortens text to `max` characters, marking the cut with `…`, and puts it on one line.
pub(crate) fn clip(s: &str, max: usize) -> String {
    let one_line: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut t: String = one_line.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}
