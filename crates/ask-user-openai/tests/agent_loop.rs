//! async-openai's real client against a scripted Chat Completions server on loopback: the
//! adapter's turns, recorded through a host over a JSONL log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ask_user_host::{Host, HostRuntime, ModelInfo, SessionOptions, ToolResult, ToolSpec};
use ask_user_openai::async_openai::Client;
use ask_user_openai::async_openai::config::OpenAIConfig;
use ask_user_openai::async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, CreateChatCompletionRequest,
};
use ask_user_openai::{ToolHandler, run_turn};
use ask_user_testkit::chat::{ScriptedChat, texts_of, tool_messages};
use serde_json::{Value, json};
use session_log::JsonlStore;
use tool_ask_user::AskUserConfig;
use user_questions::{
    AnswerBatch, AnswerItem, Answered, CallId, CancellationToken, Provenance, RegisterOptions,
    answerer_fn,
};

const QUESTION: &str = r#"{"questions":[{"id":"db","question":"Which database?","options":[{"label":"SQLite"},{"label":"PostgreSQL"}]}]}"#;

/// The agent's other tool: lists files.
struct ListFiles;

#[async_trait::async_trait]
impl ToolHandler for ListFiles {
    async fn call(&self, name: &str, arguments: &str, _cancel: CancellationToken) -> ToolResult {
        assert_eq!(name, "list_files");
        assert_eq!(arguments, r#"{"dir":"."}"#, "the model's raw text");
        ToolResult::ok("Cargo.toml\nsrc/")
    }
}

fn list_files() -> ToolSpec {
    ToolSpec::new(
        "list_files",
        "Lists the files of a folder.",
        json!({"type": "object", "properties": {"dir": {"type": "string"}}}),
    )
}

struct Agent {
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
    runtime: HostRuntime,
    host: Host,
    client: Client<OpenAIConfig>,
    request: CreateChatCompletionRequest,
    history: Vec<ChatCompletionRequestMessage>,
}

impl Agent {
    fn new(server: &ScriptedChat, tool: AskUserConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let runtime = HostRuntime::new(JsonlStore::new(dir.path()), Some(tool)).unwrap();
        let options = SessionOptions::named("s1").with_model(ModelInfo::new("openai", "gpt-test"));
        let host = runtime.create("s1.jsonl", options).unwrap();
        let config = OpenAIConfig::new()
            .with_api_base(server.base_url())
            .with_api_key("test-key");
        let request = CreateChatCompletionRequest {
            model: "gpt-test".to_owned(),
            tools: Some(ask_user_openai::tools(&host, &[list_files()]).unwrap()),
            ..CreateChatCompletionRequest::default()
        };
        Self {
            log: dir.path().join("s1.jsonl"),
            _dir: dir,
            runtime,
            host,
            client: Client::with_config(config),
            request,
            history: Vec::new(),
        }
    }

    async fn turn(&mut self, prompt: &str) -> String {
        self.history.push(ChatCompletionRequestMessage::User(
            ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(prompt.to_owned()),
                name: None,
            },
        ));
        run_turn(
            &self.client,
            &self.host,
            &self.request,
            &mut self.history,
            &ListFiles,
            &CancellationToken::new(),
        )
        .await
        .unwrap()
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn types(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter_map(|e| e["type"].as_str().map(str::to_owned))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_asks_and_an_answerer_of_the_application_answers() {
    let server = ScriptedChat::start([
        ScriptedChat::tool_call("call_ask_1", "ask_user_question", QUESTION),
        ScriptedChat::text("SQLite it is."),
    ])
    .await;
    let mut agent = Agent::new(&server, AskUserConfig::default());
    let answerer = answerer_fn(|request, _next| {
        let items: Vec<_> = request
            .questions
            .iter()
            .map(|q| AnswerItem::selected(&q.id, ["SQLite"]))
            .collect();
        Box::pin(async move { Ok(Answered::human(AnswerBatch::new(items))) })
    });
    let _answerer = agent
        .runtime
        .seam()
        .register(answerer, RegisterOptions::global("chat"));
    assert_eq!(agent.turn("Set up the project.").await, "SQLite it is.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The model saw both tools, the ask tool first, in the legacy mode's schema.
    let tools = requests[0]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["function"]["name"], "ask_user_question");
    assert_eq!(tools[1]["function"]["name"], "list_files");
    assert!(tools[0]["function"]["parameters"]["properties"]["timeout"].is_null());
    assert_eq!(
        tool_messages(&requests[1]),
        [(
            "call_ask_1".to_owned(),
            r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#.to_owned()
        )]
    );
    let events = agent.events();
    let call = events.iter().find(|e| e["type"] == "tool/call").unwrap();
    assert_eq!(call["data"]["callId"], "call_ask_1", "{call}");
    assert_eq!(call["data"]["arguments"], QUESTION, "the model's raw text");
    let header = events
        .iter()
        .find(|e| e["type"] == "request/header")
        .unwrap();
    assert_eq!(
        header["data"]["header"]["config"]["model"], "gpt-test",
        "{header}"
    );
    assert_eq!(
        header["data"]["header"]["tools"][1]["name"], "list_files",
        "{header}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_question_goes_pending_the_loop_goes_on_and_the_late_answer_comes_next_turn() {
    let server = ScriptedChat::start([
        // Turn 1: ask (a one-second window nobody answers), list files meanwhile, then reply.
        ScriptedChat::tool_call(
            "call_ask_1",
            "ask_user_question",
            r#"{"questions":[{"id":"db","question":"Which database?","options":[{"label":"SQLite"},{"label":"PostgreSQL"}]}],"timeout":1}"#,
        ),
        ScriptedChat::tool_call("call_ls_1", "list_files", r#"{"dir":"."}"#),
        ScriptedChat::text("I looked around while you think about the database."),
        // Turn 2: the late answer is in the request.
        ScriptedChat::text("PostgreSQL, then."),
    ])
    .await;
    let mut agent = Agent::new(&server, AskUserConfig::timed_secs(120));
    agent.turn("Set up the project.").await;
    let requests = server.requests();
    let pending = &tool_messages(&requests[1])[0];
    assert_eq!(pending.0, "call_ask_1");
    assert!(pending.1.starts_with(r#"{"pending":true"#), "{}", pending.1);
    assert_eq!(
        tool_messages(&requests[2])[1],
        ("call_ls_1".to_owned(), "Cargo.toml\nsrc/".to_owned())
    );

    // The person answers after the window, from anywhere the host's late answers reach.
    let answers = AnswerBatch::new([AnswerItem::selected("db", ["PostgreSQL"])]);
    agent
        .host
        .late()
        .queue(
            &CallId::from("call_ask_1"),
            answers,
            Provenance::human("chat"),
        )
        .unwrap();
    assert_eq!(agent.turn("Go on.").await, "PostgreSQL, then.");
    let requests = server.requests();
    let users = texts_of(&requests[3], "user");
    let late = users
        .iter()
        .find(|text| text.contains("answer_to_pending_question"))
        .unwrap_or_else(|| panic!("no late reply in {users:?}"));
    assert!(late.contains("PostgreSQL"), "{late}");
    assert!(late.contains("call_ask_1"), "{late}");

    // The log has every call and its result, the late reply admitted; it folds settled once.
    let types = agent.types();
    let count = |kind: &str| types.iter().filter(|t| *t == kind).count();
    assert_eq!(count("tool/call"), 2, "{types:?}");
    assert_eq!(count("tool/result"), 2, "{types:?}");
    assert_eq!(count("user/message"), 1, "{types:?}");
    let projection = agent.host.projection();
    let view = projection.view();
    assert_eq!(view.settled.len(), 1);
    assert!(view.active.is_empty());
}
