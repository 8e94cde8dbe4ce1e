//! rig's own agent (`AgentBuilder`, `prompt`) and its `openai` provider's Chat Completions model
//! against a scripted Chat Completions server on loopback: the adapter's turns, recorded through
//! a host over a JSONL log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use ask_user_host::{Host, HostRuntime, ModelInfo, SessionOptions, ToolResult, ToolSpec};
use ask_user_rig::AskUser;
use ask_user_rig::rig_agent::{Agent, AgentBuilder};
use ask_user_rig::rig_core::completion::Message;
use ask_user_rig::rig_core::providers::openai::OpenAIConfig;
use ask_user_rig::rig_core::tool::{Tool, ToolContext};
use ask_user_testkit::chat::{ScriptedChat, text_of, texts_of, tool_messages};
use serde_json::{Value, json};
use session_log::JsonlStore;
use tool_ask_user::AskUserConfig;
use user_questions::{
    AnswerBatch, AnswerItem, Answered, CallId, Provenance, RegisterOptions, answerer_fn,
};

/// The model's raw text, with the spaces a model may put in: the log must keep them.
const QUESTION: &str = r#"{"questions": [{"id": "db", "question": "Which database?", "options": [{"label": "SQLite"}, {"label": "PostgreSQL"}]}]}"#;
const TIMED_QUESTION: &str = r#"{"questions": [{"id": "db", "question": "Which database?", "options": [{"label": "SQLite"}, {"label": "PostgreSQL"}]}], "timeout": 1}"#;
const LIST: &str = r#"{ "dir": "." }"#;

/// The agent's other tool, a typed rig tool: lists files.
struct ListFiles;

impl Tool for ListFiles {
    const NAME: &'static str = "list_files";
    type Args = Value;
    type Output = String;
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "Lists the files of a folder.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"dir": {"type": "string"}}})
    }

    async fn call(&self, _context: &mut ToolContext, args: Value) -> Result<String, Self::Error> {
        assert_eq!(args["dir"], ".");
        Ok("Cargo.toml\nsrc/".to_owned())
    }
}

struct Session {
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
    runtime: HostRuntime,
    host: Arc<Host>,
    ask: AskUser,
    agent: Agent,
    history: Vec<Message>,
}

impl Session {
    fn new(server: &ScriptedChat, tool: AskUserConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let runtime = HostRuntime::new(JsonlStore::new(dir.path()), Some(tool)).unwrap();
        let options = SessionOptions::named("s1").with_model(ModelInfo::new("openai", "gpt-test"));
        let host = Arc::new(runtime.create("s1.jsonl", options).unwrap());
        let ask = AskUser::new(Arc::clone(&host));
        let model = OpenAIConfig::new("test-key")
            .with_base_url(server.base_url())
            .client()
            .chat("gpt-test");
        let agent = AgentBuilder::new(model)
            .tool(ask.tool())
            .tool(ask.record(ListFiles).unwrap())
            .add_hook(ask.hook())
            .default_max_turns(8)
            .build();
        Self {
            log: dir.path().join("s1.jsonl"),
            _dir: dir,
            runtime,
            host,
            ask,
            agent,
            history: Vec::new(),
        }
    }

    /// Registers the application's answerer that answers every question with `SQLite`.
    fn answer_with_sqlite(&self) -> user_questions::AnswererGuard {
        self.runtime
            .seam()
            .register(answer_sqlite(), RegisterOptions::global("chat"))
    }

    async fn turn(&mut self, prompt: &str) -> String {
        self.history.extend(self.ask.begin_turn().unwrap());
        let response = self
            .agent
            .prompt(prompt)
            .history(self.history.clone())
            .await
            .unwrap();
        self.history.extend(response.messages().iter().cloned());
        response.output()
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

    /// The `tool/call` of `call_id`.
    fn tool_call(&self, call_id: &str) -> Value {
        self.events()
            .into_iter()
            .find(|e| e["type"] == "tool/call" && e["data"]["callId"] == call_id)
            .unwrap_or_else(|| panic!("no tool/call {call_id} in {:?}", self.types()))
    }
}

/// The text of one content part.
fn text_of_part(part: &Value) -> String {
    part["text"].as_str().unwrap_or_default().to_owned()
}

fn answer_sqlite() -> Arc<dyn user_questions::Answerer> {
    answerer_fn(|request, _next| {
        let items: Vec<_> = request
            .questions
            .iter()
            .map(|q| AnswerItem::selected(&q.id, ["SQLite"]))
            .collect();
        Box::pin(async move { Ok(Answered::human(AnswerBatch::new(items))) })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_asks_and_an_answerer_of_the_application_answers() {
    let server = ScriptedChat::start([
        ScriptedChat::tool_call("call_ask_1", "ask_user_question", QUESTION),
        ScriptedChat::text("SQLite it is."),
    ])
    .await;
    let mut session = Session::new(&server, AskUserConfig::default());
    let _answerer = session.answer_with_sqlite();
    assert_eq!(session.turn("Set up the project.").await, "SQLite it is.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The model saw both tools, the ask tool first, with the host's schema exactly.
    let tools = requests[0]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["function"]["name"], "ask_user_question");
    assert_eq!(tools[1]["function"]["name"], "list_files");
    let definition = session.host.tool().definition();
    assert_eq!(tools[0]["function"]["parameters"], definition.parameters);
    assert_eq!(tools[0]["function"]["description"], definition.description);
    assert!(tools[0]["function"]["parameters"]["properties"]["timeout"].is_null());
    assert_eq!(
        tool_messages(&requests[1]),
        [(
            "call_ask_1".to_owned(),
            r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#.to_owned()
        )]
    );

    let call = session.tool_call("call_ask_1");
    assert_eq!(call["data"]["arguments"], QUESTION, "the model's raw text");
    let events = session.events();
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
    // One turn, one step per model call, the final text logged, the turn ended.
    let types = session.types();
    let count = |kind: &str| types.iter().filter(|t| *t == kind).count();
    assert_eq!(count("turn/start"), 1, "{types:?}");
    assert_eq!(count("step/start"), 2, "{types:?}");
    assert_eq!(count("step/end"), 2, "{types:?}");
    assert_eq!(count("turn/end"), 1, "{types:?}");
    assert_eq!(count("tool/result"), 1, "{types:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "assistant/message" && e.to_string().contains("SQLite it is.")),
        "{types:?}"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_timed_question_goes_pending_the_agent_goes_on_and_the_late_answer_comes_next_prompt() {
    let server = ScriptedChat::start([
        // Prompt 1: ask (a one-second window nobody answers), list files meanwhile, then reply.
        ScriptedChat::tool_call("call_ask_1", "ask_user_question", TIMED_QUESTION),
        ScriptedChat::tool_call("call_ls_1", "list_files", LIST),
        ScriptedChat::text("I looked around while you think about the database."),
        // Prompt 2: the late answer is in the request.
        ScriptedChat::text("PostgreSQL, then."),
    ])
    .await;
    let mut session = Session::new(&server, AskUserConfig::timed_secs(120));
    session.turn("Set up the project.").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let tools = requests[0]["tools"].as_array().unwrap();
    assert_eq!(
        tools[0]["function"]["parameters"],
        session.host.tool().definition().parameters,
        "the timed schema, exactly"
    );
    let pending = &tool_messages(&requests[1])[0];
    assert_eq!(pending.0, "call_ask_1");
    assert!(pending.1.starts_with(r#"{"pending":true"#), "{}", pending.1);
    assert_eq!(
        tool_messages(&requests[2])[1],
        ("call_ls_1".to_owned(), "Cargo.toml\nsrc/".to_owned())
    );

    // The person answers after the window, from anywhere the host's late answers reach.
    let answers = AnswerBatch::new([AnswerItem::selected("db", ["PostgreSQL"])]);
    session
        .host
        .late()
        .queue(
            &CallId::from("call_ask_1"),
            answers,
            Provenance::human("chat"),
        )
        .unwrap();
    assert_eq!(session.turn("Go on.").await, "PostgreSQL, then.");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let users = texts_of(&requests[3], "user");
    assert!(
        users
            .iter()
            .any(|text| text.contains("answer_to_pending_question")),
        "no late reply in {users:?}"
    );
    // The late reply comes before the prompt (rig's Chat wire joins adjacent user messages into
    // one message of several parts: the reply's, then the prompt's).
    let prompt = requests[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    let parts: Vec<String> = match &prompt["content"] {
        Value::Array(parts) => parts.iter().map(text_of_part).collect(),
        other => vec![text_of(other)],
    };
    let late = parts
        .iter()
        .position(|text| text.contains("answer_to_pending_question"))
        .unwrap_or_else(|| panic!("no late reply in {prompt}"));
    assert!(parts[late].contains("PostgreSQL"), "{}", parts[late]);
    assert!(parts[late].contains("call_ask_1"), "{}", parts[late]);
    assert_eq!(parts.last().map(String::as_str), Some("Go on."), "{prompt}");
    assert!(late < parts.len() - 1, "{prompt}");

    // The log has every call (the provider's ids, the model's raw text) and its result, the
    // late reply admitted; it folds settled once.
    assert_eq!(
        session.tool_call("call_ask_1")["data"]["arguments"],
        TIMED_QUESTION
    );
    let list = session.tool_call("call_ls_1");
    assert_eq!(list["data"]["name"], "list_files");
    assert_eq!(list["data"]["arguments"], LIST, "the model's raw text");
    let types = session.types();
    let count = |kind: &str| types.iter().filter(|t| *t == kind).count();
    assert_eq!(count("tool/call"), 2, "{types:?}");
    assert_eq!(count("tool/result"), 2, "{types:?}");
    assert_eq!(count("user/message"), 1, "{types:?}");
    assert_eq!(count("turn/start"), 2, "{types:?}");
    assert_eq!(count("turn/end"), 2, "{types:?}");
    let results: Vec<Value> = session
        .events()
        .into_iter()
        .filter(|e| e["type"] == "tool/result")
        .collect();
    assert_eq!(results[1]["data"]["message"]["toolCallId"], "call_ls_1");
    assert_eq!(
        results[1]["data"]["message"]["content"][0]["text"],
        "Cargo.toml\nsrc/"
    );
    let projection = session.host.projection();
    let view = projection.view();
    assert_eq!(view.settled.len(), 1);
    assert!(view.active.is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_prompt_dropped_while_the_question_waits_logs_the_call_cancelled() {
    let server = ScriptedChat::start([
        ScriptedChat::tool_call("call_ask_1", "ask_user_question", QUESTION),
        ScriptedChat::text("never sent"),
    ])
    .await;
    let mut session = Session::new(&server, AskUserConfig::default());
    // Blocking mode and an answerer that never answers: the call waits until it is cancelled.
    let asked = Arc::new(tokio::sync::Notify::new());
    let signal = Arc::clone(&asked);
    let never = answerer_fn(move |_request, _next| {
        let signal = Arc::clone(&signal);
        Box::pin(async move {
            signal.notify_one();
            std::future::pending().await
        })
    });
    let _answerer = session
        .runtime
        .seam()
        .register(never, RegisterOptions::global("never"));
    tokio::select! {
        _ = session.turn("Set up the project.") => panic!("the prompt ended"),
        () = asked.notified() => {}
    }
    // The prompt's future is dropped: rig drops the tool's, whose guard cancels the call.
    session.ask.idle().await;
    session.ask.end_turn("aborted").unwrap();

    let events = session.events();
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .unwrap_or_else(|| panic!("no tool/result in {:?}", session.types()));
    let message = &result["data"]["message"];
    assert_eq!(message["toolCallId"], "call_ask_1");
    assert_eq!(message["isError"], true, "{result}");
    assert!(
        text_of(&message["content"]).contains("cancelled"),
        "{result}"
    );
    assert_eq!(result["data"]["error"]["code"], "ASK_ABORTED", "{result}");
    assert_eq!(server.requests().len(), 1);
    let types = session.types();
    assert_eq!(
        types.last().map(String::as_str),
        Some("turn/end"),
        "{types:?}"
    );
}

/// An agent of the application's own making: the ask tool as a rig `DynamicTool`, the other tool
/// a closure over the raw argument text (`record_fn`), with or without the hook.
fn dynamic_agent(server: &ScriptedChat, ask: &AskUser, hooked: bool) -> Agent {
    let list = ask
        .record_fn(
            ToolSpec::new(
                "list_files",
                "Lists the files of a folder.",
                json!({"type": "object", "properties": {"dir": {"type": "string"}}}),
            ),
            |raw| async move { ToolResult::ok(format!("listed for {raw}")) },
        )
        .unwrap();
    let model = OpenAIConfig::new("test-key")
        .with_base_url(server.base_url())
        .client()
        .chat("gpt-test");
    let builder = AgentBuilder::new(model)
        .dynamic_tool(ask.dynamic_tool())
        .dynamic_tool(list)
        .default_max_turns(8);
    if hooked {
        builder.add_hook(ask.hook()).build()
    } else {
        builder.build()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dynamic_tool_and_a_closure_tool_are_offered_and_recorded() {
    for hooked in [true, false] {
        let server = ScriptedChat::start([
            ScriptedChat::tool_call("call_ls_1", "list_files", LIST),
            ScriptedChat::tool_call("call_ask_1", "ask_user_question", QUESTION),
            ScriptedChat::text("SQLite it is."),
        ])
        .await;
        let mut session = Session::new(&server, AskUserConfig::default());
        session.agent = dynamic_agent(&server, &session.ask, hooked);
        let _answerer = session.answer_with_sqlite();
        assert_eq!(session.turn("Set up the project.").await, "SQLite it is.");

        let requests = server.requests();
        let tools = requests[0]["tools"].as_array().unwrap();
        let definition = session.host.tool().definition();
        let ask = tools
            .iter()
            .find(|t| t["function"]["name"] == "ask_user_question")
            .unwrap();
        assert_eq!(ask["function"]["parameters"], definition.parameters);
        assert_eq!(ask["function"]["description"], definition.description);
        let answers = r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#;
        assert!(
            tool_messages(&requests[2])
                .iter()
                .any(|(_, text)| text == answers),
            "{:?}",
            tool_messages(&requests[2])
        );

        let events = session.events();
        let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool/call").collect();
        let results = events.iter().filter(|e| e["type"] == "tool/result").count();
        assert_eq!(
            (calls.len(), results),
            (2, 2),
            "hooked {hooked}: {:?}",
            session.types()
        );
        let list = calls
            .iter()
            .find(|c| c["data"]["name"] == "list_files")
            .unwrap();
        let asked = calls
            .iter()
            .find(|c| c["data"]["name"] == "ask_user_question")
            .unwrap();
        if hooked {
            // The provider's ids and the model's own bytes.
            assert_eq!(list["data"]["callId"], "call_ls_1");
            assert_eq!(list["data"]["arguments"], LIST);
            assert_eq!(asked["data"]["callId"], "call_ask_1");
            assert_eq!(asked["data"]["arguments"], QUESTION);
        } else {
            // Without the hook: ids minted by the adapter, rig's serialisation of the same value.
            for call in [list, asked] {
                let id = call["data"]["callId"].as_str().unwrap();
                assert!(id.starts_with("rig-"), "{id}");
            }
            let logged: Value =
                serde_json::from_str(asked["data"]["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(logged, serde_json::from_str::<Value>(QUESTION).unwrap());
        }
    }
}
