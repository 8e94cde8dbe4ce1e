//! Token counts (issue "model experience"): what a definition, a pending result or a late reply
//! costs in the model's context, counted with the `o200k_base` tokenizer on the exact text a host
//! sends. The vocabulary ships inside `tiktoken-rs`, so counting needs no network.

use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;

use crate::guards::Failure;
use crate::model::{Cost, CrateCatalog};

/// Counts tokens with `o200k_base`.
#[derive(Clone, Copy)]
pub struct Tokenizer {
    bpe: &'static CoreBPE,
}

impl Tokenizer {
    /// The `o200k_base` tokenizer (loaded once per process: the vocabulary is large, and it is
    /// compiled into `tiktoken-rs`, so loading it cannot fail on a machine without network).
    pub fn o200k() -> Self {
        Self {
            bpe: tiktoken_rs::o200k_base_singleton(),
        }
    }

    /// The tokens of `text` (no special tokens).
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    /// The tokens of a definition as a host sends it: compact JSON of name, description and
    /// parameters.
    pub fn definition(&self, name: &str, description: &str, parameters: &Value) -> usize {
        self.count(&definition_json(name, description, parameters))
    }
}

/// A definition as a host sends it: `{"name":…,"description":…,"parameters":…}`, compact.
pub fn definition_json(name: &str, description: &str, parameters: &Value) -> String {
    json!({ "name": name, "description": description, "parameters": parameters }).to_string()
}

/// The token budget of a definition without a registered one: generous, so that a new tool is
/// never blocked by it, while a registered budget holds a known tool to its measured cost.
pub const DEFAULT_TOKEN_BUDGET: usize = 400;

/// A registered token budget for one tool variant's definition.
#[derive(Clone, Copy, Debug)]
pub struct TokenBudget {
    /// `"<tool name> <variant id>"`.
    pub key: &'static str,
    /// The most tokens the definition may cost.
    pub tokens: usize,
}

/// Measures every definition and sample, and checks each definition against its budget (the
/// registered one, or [`DEFAULT_TOKEN_BUDGET`]); every registered budget must be in use.
pub fn measure(
    catalogs: &mut [CrateCatalog],
    budgets: &[TokenBudget],
    tokenizer: &Tokenizer,
) -> Vec<Failure> {
    let mut failures = Vec::new();
    let mut used = vec![false; budgets.len()];
    for definition in catalogs.iter_mut().flat_map(|c| &mut c.definitions) {
        let key = format!("{} {}", definition.name, definition.variant_id);
        let budget = match budgets.iter().position(|b| b.key == key) {
            Some(index) => {
                used[index] = true;
                budgets[index].tokens
            }
            None => DEFAULT_TOKEN_BUDGET,
        };
        let text = definition_json(
            &definition.name,
            &definition.description,
            &definition.parameters,
        );
        let tokens = tokenizer.count(&text);
        if tokens > budget {
            failures.push(Failure::OverTokenBudget {
                tool: definition.name.clone(),
                variant: definition.variant_id.clone(),
                tokens,
                budget,
            });
        }
        definition.cost = Some(Cost {
            tokens,
            bytes: text.len(),
            budget,
            samples: definition
                .samples
                .iter()
                .map(|s| (s.label.clone(), tokenizer.count(&s.text), s.text.len()))
                .collect(),
        });
    }
    for (budget, used) in budgets.iter().zip(used) {
        if !used {
            failures.push(Failure::BadTokenBudget {
                key: budget.key.to_owned(),
            });
        }
    }
    failures
}
