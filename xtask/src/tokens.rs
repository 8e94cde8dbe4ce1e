//! Token counts (issue "model experience"): what a definition, a pending result or a late reply
//! costs in the model's context, counted with the `o200k_base` tokenizer on the exact text a host
//! sends. The vocabulary ships inside `tiktoken-rs`, so counting needs no network.

use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;

use crate::guards::Failure;
use crate::model::{Cost, CrateCatalog, SampleCost};

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

    /// The tokens of a definition: the compact JSON of its name, description and parameters
    /// (what every host sends, inside whatever envelope its provider wants).
    pub fn definition(&self, name: &str, description: &str, parameters: &Value) -> usize {
        self.count(&definition_json(name, description, parameters))
    }
}

/// A definition as counted: `{"name":…,"description":…,"parameters":…}`, compact.
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
/// registered one, or [`DEFAULT_TOKEN_BUDGET`]) and each sample against its own, if it has one.
/// With `check_unused`, every registered budget must be in use, and none registered twice (skip
/// that check when a harvest failed: its budgets would look unused).
pub fn measure(
    catalogs: &mut [CrateCatalog],
    budgets: &[TokenBudget],
    tokenizer: &Tokenizer,
    check_unused: bool,
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
        let over = |what: &str, tokens: usize, budget: usize| Failure::OverTokenBudget {
            tool: definition.name.clone(),
            variant: definition.variant_id.clone(),
            what: what.to_owned(),
            tokens,
            budget,
        };
        if tokens > budget {
            failures.push(over("the definition", tokens, budget));
        }
        let mut samples = Vec::new();
        for sample in &definition.samples {
            let cost = SampleCost {
                label: sample.label.clone(),
                tokens: tokenizer.count(&sample.text),
                bytes: sample.text.len(),
                budget: sample.budget,
            };
            if let Some(budget) = cost.budget
                && cost.tokens > budget
            {
                failures.push(over(&cost.label, cost.tokens, budget));
            }
            samples.push(cost);
        }
        definition.cost = Some(Cost {
            tokens,
            bytes: text.len(),
            budget,
            samples,
        });
    }
    if check_unused {
        for (index, (budget, used)) in budgets.iter().zip(used).enumerate() {
            let problem = if budgets[..index].iter().any(|b| b.key == budget.key) {
                Some("registered twice; keep one")
            } else if !used {
                Some("no catalogued tool variant has this key; remove the budget")
            } else {
                None
            };
            if let Some(problem) = problem {
                failures.push(Failure::BadTokenBudget {
                    key: budget.key.to_owned(),
                    problem,
                });
            }
        }
    }
    failures
}
