//! The page and the terminal show the same characters as escapes: the page's `hidden` class
//! (assets/page.js) and the one sanitiser (`user_questions::sanitize`) agree on every character
//! of the Basic Multilingual Plane, the one the page's class (UTF-16 units) covers.

#![allow(clippy::unwrap_used)]

use user_questions::sanitize::visible_lines;

/// The ranges of the page's `hidden` character class.
fn page_ranges() -> Vec<(u32, u32)> {
    let js = include_str!("../assets/page.js");
    let open = "const hidden = /[";
    let start = js.find(open).unwrap() + open.len();
    let end = start + js[start..].find("]/g").unwrap();
    let class: Vec<char> = js[start..end].chars().collect();
    let unit = |at: usize| -> u32 {
        assert_eq!(&class[at..at + 2], ['\\', 'u'], "only \\uXXXX in the class");
        let hex: String = class[at + 2..at + 6].iter().collect();
        u32::from_str_radix(&hex, 16).unwrap()
    };
    let mut ranges = Vec::new();
    let mut at = 0;
    while at < class.len() {
        let first = unit(at);
        at += 6;
        if class.get(at) == Some(&'-') {
            ranges.push((first, unit(at + 1)));
            at += 7;
        } else {
            ranges.push((first, first));
        }
    }
    ranges
}

#[test]
fn the_page_escapes_exactly_what_the_terminal_escapes() {
    let ranges = page_ranges();
    assert!(ranges.len() > 5, "{ranges:?}");
    for c in (0..=0xFFFF_u32).filter_map(char::from_u32) {
        let on_page = ranges.iter().any(|&(a, b)| (a..=b).contains(&u32::from(c)));
        let text = c.to_string();
        let on_terminal = visible_lines(&text) != text;
        assert_eq!(on_page, on_terminal, "U+{:04X}", u32::from(c));
    }
}
