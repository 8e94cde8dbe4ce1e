//! A complete agent loop on rig with `ask_user_question`, answered on this terminal: the person
//! types the answer to each question (or nothing, to let a timed question go pending and answer
//! it later with `/late CALL_ID QUESTION_ID ANSWER`). Every step is in `agent.jsonl`.
//!
//! ```text
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_MODEL=local cargo run -p ask-user-rig --example agent
//! ```
//! (`--features rustls` for an HTTPS provider; `OPENAI_API_KEY` is sent when set.)

use std::sync::Arc;

use ask_user_host::{HostRuntime, ModelInfo, SessionOptions};
use ask_user_rig::AskUser;
use ask_user_rig::rig_agent::AgentBuilder;
use ask_user_rig::rig_core::providers::openai::OpenAIConfig;
use session_log::JsonlStore;
use tool_ask_user::AskUserConfig;
use user_questions::sanitize::{visible, visible_lines};
use user_questions::{
    AnswerBatch, AnswerItem, Answered, CallId, Provenance, RegisterOptions, answerer_fn,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base =
        std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".into());
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4.1-mini".into());
    let key = std::env::var("OPENAI_API_KEY").unwrap_or_default();
    let runtime = HostRuntime::new(JsonlStore::new("."), Some(AskUserConfig::timed_secs(60)))?;
    let options = SessionOptions::named("agent").with_model(ModelInfo::new("openai", &model));
    let host = Arc::new(runtime.create("agent.jsonl", options)?);
    // Lines of the terminal, read on a thread of their own: the answerer and the loop take them
    // in turn (a receive is cancel safe, so a window that closes loses no line).
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        while let Some(line) = read_line() {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let lines = Arc::new(tokio::sync::Mutex::new(rx));
    // The application's own answerer: this terminal (an empty line lets the window pass).
    let answer_lines = Arc::clone(&lines);
    let terminal = answerer_fn(move |request, next| {
        let lines = Arc::clone(&answer_lines);
        Box::pin(async move {
            let call = request
                .wait
                .as_ref()
                .map(|w| w.call_id().to_string())
                .unwrap_or_default();
            let mut items = Vec::new();
            for question in &request.questions {
                // Model text reaches the terminal with its control characters escaped.
                println!(
                    "? [{} {}] {} (answer, or an empty line to answer later)",
                    visible(&call),
                    visible(&question.id),
                    visible_lines(&question.question)
                );
                let line = lines.lock().await.recv().await.unwrap_or_default();
                if line.trim().is_empty() {
                    return next.run().await;
                }
                items.push(AnswerItem::custom(&question.id, line.trim()));
            }
            Ok(Answered::human(AnswerBatch::new(items)))
        })
    });
    let _terminal = runtime
        .seam()
        .register(terminal, RegisterOptions::global("terminal"));

    let ask = AskUser::new(Arc::clone(&host));
    // rig's Chat Completions model (its `completion` would pick the Responses API for OpenAI).
    let chat = OpenAIConfig::new(key)
        .with_base_url(base)
        .client()
        .chat(&model);
    let agent = AgentBuilder::new(chat)
        .tool(ask.tool())
        .add_hook(ask.hook())
        .default_max_turns(16)
        .build();
    let mut history = Vec::new();
    println!(
        "Say something to the agent (`/late CALL_ID QUESTION_ID ANSWER` answers a pending question):"
    );
    loop {
        let Some(line) = lines.lock().await.recv().await else {
            break;
        };
        if let Some(rest) = line.strip_prefix("/late ") {
            let mut words = rest.splitn(3, ' ');
            let (call, id, answer) = (words.next(), words.next(), words.next());
            let (Some(call), Some(id), Some(answer)) = (call, id, answer) else {
                println!("usage: /late CALL_ID QUESTION_ID ANSWER");
                continue;
            };
            let answers = AnswerBatch::new([AnswerItem::custom(id, answer)]);
            match host
                .late()
                .queue(&CallId::from(call), answers, Provenance::human("terminal"))
            {
                Ok(_) => println!("(queued: the agent reads it at its next prompt)"),
                Err(error) => println!("not taken: {}", visible(&error.to_string())),
            }
            continue;
        }
        // The late replies queued since the last prompt go into the history before this one.
        history.extend(ask.begin_turn()?);
        match agent.prompt(line).history(history.clone()).await {
            Ok(response) => {
                history.extend(response.messages().iter().cloned());
                println!("agent: {}", visible_lines(&response.output()));
            }
            Err(error) => println!("the agent failed: {}", visible(&error.to_string())),
        }
    }
    Ok(())
}

/// One line of stdin, without its line end; `None` at its end.
fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}
