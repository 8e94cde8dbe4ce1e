//! `--check`: compares the committed catalog with the generated one, byte for byte, and reports
//! the first differing line (SPEC §10).

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

/// The command that regenerates the catalog.
pub const REGENERATE_COMMAND: &str = "cargo xtask catalog";

/// The result of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// The committed file equals the generated text.
    UpToDate,
    /// The committed file differs from the generated text, or is missing.
    Stale(Difference),
}

impl Check {
    /// The process exit code for this result: 0 when up to date, 1 when stale.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::UpToDate => 0,
            Self::Stale(_) => 1,
        }
    }
}

/// Where the committed file first differs from the generated text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The file as shown to the reader (repository-relative).
    pub display_path: String,
    /// Whether the file does not exist.
    pub missing: bool,
    /// The 1-based number of the first differing line.
    pub line: usize,
    /// That line in the committed file, with its line ending; `None` past the end of the file.
    pub committed: Option<String>,
    /// That line in the generated text, with its line ending; `None` past the end of the text.
    pub generated: Option<String>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.missing {
            "is out of date (the file is missing)"
        } else {
            "is out of date"
        };
        writeln!(
            f,
            "{} {state}: run `{REGENERATE_COMMAND}` and commit the result.",
            self.display_path
        )?;
        writeln!(f, "first difference at line {}:", self.line)?;
        writeln!(f, "  committed: {}", shown(self.committed.as_deref()))?;
        write!(f, "  generated: {}", shown(self.generated.as_deref()))
    }
}

fn shown(line: Option<&str>) -> String {
    line.map_or_else(|| "end of file".to_owned(), |line| format!("{line:?}"))
}

/// Compares the committed bytes (`None` when the file is missing) with the generated text.
pub fn compare(display_path: &str, committed: Option<&[u8]>, generated: &str) -> Check {
    if committed == Some(generated.as_bytes()) {
        return Check::UpToDate;
    }
    let committed_lines = committed
        .map(|bytes| {
            bytes
                .split_inclusive(|&byte| byte == b'\n')
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let generated_lines = generated
        .as_bytes()
        .split_inclusive(|&byte| byte == b'\n')
        .collect::<Vec<_>>();
    // Lines keep their endings, so a missing final newline or a `\r\n` shows as a difference.
    // The texts differ, so some line differs; a missing file against empty text is line 1.
    let index = (0..committed_lines.len().max(generated_lines.len()))
        .find(|&index| committed_lines.get(index) != generated_lines.get(index))
        .unwrap_or_default();
    let text = |lines: &[&[u8]]| {
        lines
            .get(index)
            .map(|line| String::from_utf8_lossy(line).into_owned())
    };
    Check::Stale(Difference {
        display_path: display_path.to_owned(),
        missing: committed.is_none(),
        line: index + 1,
        committed: text(&committed_lines),
        generated: text(&generated_lines),
    })
}

/// Reads `path` and compares it with the generated text; a missing file is a difference at
/// line 1. Other read errors are returned.
pub fn check_file(path: &Path, display_path: &str, generated: &str) -> io::Result<Check> {
    let committed = match fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    Ok(compare(display_path, committed.as_deref(), generated))
}
