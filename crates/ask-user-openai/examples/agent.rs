//! A complete agent loop on async-openai with `ask_user_question`, answered on this terminal:
//! the person types the answer to each question (or nothing, to let a timed question go pending
//! and answer it later with `/late CALL_ID ANSWER`). Every step is in `agent.jsonl`.
//!
//! ```text
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_MODEL=local cargo run -p ask-user-openai --example agent
//! ```
//! (`--features rustls` for an HTTPS provider; `OPENAI_API_KEY` is sent when set.)

use ask_user_host::{HostRuntime, ModelInfo, SessionOptions, ToolSpec};
use ask_user_openai::async_openai::Client;
use ask_user_openai::async_openai::config::OpenAIConfig;
use ask_user_openai::async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, CreateChatCompletionRequest,
};
use ask_user_openai::{NoOtherTools, run_turn};
use session_log::JsonlStore;
use tool_ask_user::AskUserConfig;
use user_questions::sanitize::{visible, visible_lines};
use user_questions::{
    AnswerBatch, AnswerItem, Answered, CallId, CancellationToken, Provenance, RegisterOptions,
    answerer_fn,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base =
        std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".into());
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4.1-mini".into());
    let key = std::env::var("OPENAI_API_KEY").unwrap_or_default();
    let runtime = HostRuntime::new(JsonlStore::new("."), Some(AskUserConfig::timed_secs(60)))?;
    let options = SessionOptions::named("agent").with_model(ModelInfo::new("openai", &model));
    let host = runtime.create("agent.jsonl", options)?;
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
    let lines = std::sync::Arc::new(tokio::sync::Mutex::new(rx));
    // The application's own answerer: this terminal (an empty line lets the window pass).
    let answer_lines = std::sync::Arc::clone(&lines);
    let terminal = answerer_fn(move |request, next| {
        let lines = std::sync::Arc::clone(&answer_lines);
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
    let client = Client::with_config(OpenAIConfig::new().with_api_base(base).with_api_key(key));
    let request = CreateChatCompletionRequest {
        model,
        tools: Some(ask_user_openai::tools(&host, &[] as &[ToolSpec])?),
        ..CreateChatCompletionRequest::default()
    };
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
                Ok(_) => println!("(queued: the agent reads it at its next turn)"),
                Err(error) => println!("not taken: {}", visible(&error.to_string())),
            }
            continue;
        }
        history.push(ChatCompletionRequestMessage::User(
            ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(line),
                name: None,
            },
        ));
        let cancel = CancellationToken::new();
        let reply = run_turn(
            &client,
            &host,
            &request,
            &mut history,
            &NoOtherTools,
            &cancel,
        )
        .await?;
        println!("agent: {}", visible_lines(&reply));
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
