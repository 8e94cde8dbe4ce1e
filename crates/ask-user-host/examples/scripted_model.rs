//! The scripted model of `ask-user demo`, headless: nobody answers in its one-second window, so
//! the call goes pending; the model works on; a person's late answer is queued through the
//! host's late-reply facet, and the model admits it in a new turn, which settles the question.
//!
//! ```text
//! cargo run -p ask-user-host --example scripted_model
//! ```

use std::sync::Arc;
use std::time::Duration;

use ask_user_host::Host;
use ask_user_host::demo::{DEMO_CALL_ID, Played, ScriptedModel, Shown};
use tool_ask_user::AskUserConfig;
use user_questions::{AnswerBatch, AnswerItem, CallId, CancellationToken, Provenance};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = Arc::new(Host::in_memory(AskUserConfig::timed_secs(1))?);
    let show = |shown: Shown<'_>| match shown {
        Shown::Model(text) => println!("model › {text}"),
        Shown::Json(label, json) => println!("{label}{json}"),
    };
    let model = ScriptedModel::new(&host, CancellationToken::new(), &show);
    // Nobody answers in the window; once the call is pending, a person answers later, from
    // anywhere the host's desk reaches: here, a task.
    let person = Arc::clone(&host);
    let answer_later = move |_: &[_]| {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let answers = AnswerBatch::new([
                AnswerItem::selected("db", ["SQLite"]),
                AnswerItem::selected("checks", ["Unit tests", "Lint"]),
            ]);
            let call = CallId::from(DEMO_CALL_ID);
            if let Err(refusal) = person
                .late()
                .queue(&call, answers, Provenance::human("example"))
            {
                eprintln!("the late answer was refused: {refusal}");
            }
        });
        true
    };
    let played = model.play(async {}, answer_later).await?;
    assert!(
        matches!(played, Played::Pending { admitted: true, .. }),
        "the late reply is admitted"
    );
    println!("settled: {}", host.projection().view().settled.len());
    Ok(())
}
