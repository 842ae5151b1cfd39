//! Comparing the tables of `jfr view` with another printer's (the
//! `flightrec` command's): the rows of a view as (method, first number),
//! and the top rows cut where a tie would make the cut arbitrary.

/// A view's rows as (method without parameters, first number), the way
/// both printers lay them out; the JDK shortens long parameter lists to
/// `(...)`, so parameters are left out of the comparison.
pub fn rows(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut body = false;
    for line in text.lines() {
        if line.starts_with("---") {
            body = true;
            continue;
        }
        if !body || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        let Some(value) = cols
            .iter()
            .skip(1)
            .find(|c| c.chars().next().is_some_and(|c| c.is_ascii_digit()))
        else {
            continue;
        };
        let name = line.split('(').next().unwrap_or(line).trim().to_owned();
        out.push((name, (*value).to_owned()));
    }
    out
}

/// The top `n` rows, cut where a tie would make the cut arbitrary, in a
/// canonical order (value, then name).
pub fn top(rows: &[(String, String)], n: usize) -> Vec<(String, String)> {
    let mut k = n.min(rows.len());
    while k > 0 && k < rows.len() && rows[k].1 == rows[k - 1].1 {
        k -= 1;
    }
    let mut t = rows[..k].to_vec();
    t.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_start_after_the_rule_and_ties_cut_early() {
        let text = "Title\n\nMethod   Samples Percent\n-------- ------- -------\n\
                    a.B.c(int)  10  50%\nd.E.f()  5  25%\ng.H.i()  5  25%\n";
        let r = rows(text);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0], ("a.B.c".to_owned(), "10".to_owned()));
        // The second place is a tie, so the top 2 is the top 1.
        assert_eq!(top(&r, 2), vec![("a.B.c".to_owned(), "10".to_owned())]);
        assert_eq!(top(&r, 3).len(), 3);
    }
}
