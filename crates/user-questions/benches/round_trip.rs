//! The ask round trip through the waterfall against a bare tokio oneshot round trip on the same
//! runtime, and the cost of each declining answerer in front of the one that answers.
//!
//! Run: `cargo bench -p user-questions --bench round_trip`. The ratios to read are
//! `ask/answer_at_once ÷ anchor/oneshot` (goal ≤ 10) and
//! `(ask/declining/N − ask/declining/0) ÷ N ÷ anchor/oneshot` (goal ≤ 2).
#![allow(clippy::unwrap_used, clippy::expect_used)] // A bench that cannot set up should stop loudly.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use user_questions::{
    AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError, AnswererGuard,
    AskRequest, HostBindings, Next, Question, QuestionOption, RegisterOptions, UserQuestions,
    UserQuestionsConfig, async_trait,
};

struct AnswerAtOnce;

#[async_trait]
impl Answerer for AnswerAtOnce {
    async fn answer(&self, _: &AnswerRequest, _: Next<'_>) -> Result<Answered, AnswererError> {
        Ok(Answered::human(AnswerBatch::new([AnswerItem::selected(
            "confirm",
            ["yes"],
        )])))
    }
}

struct Decline;

#[async_trait]
impl Answerer for Decline {
    async fn answer(&self, _: &AnswerRequest, next: Next<'_>) -> Result<Answered, AnswererError> {
        next.run().await
    }
}

fn question() -> Question {
    Question::new("confirm", "Proceed?")
        .with_options([QuestionOption::new("yes"), QuestionOption::new("no")])
}

fn seam_with(declining: usize) -> (UserQuestions, Vec<AnswererGuard>) {
    let seam = UserQuestions::new(UserQuestionsConfig::default(), HostBindings::default()).unwrap();
    let mut guards: Vec<AnswererGuard> = (0..declining)
        .map(|i| {
            seam.register(
                Arc::new(Decline),
                RegisterOptions::global(format!("decline-{i}")),
            )
        })
        .collect();
    guards.push(seam.register(Arc::new(AnswerAtOnce), RegisterOptions::global("ui")));
    (seam, guards)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    c.bench_function("anchor/oneshot", |b| {
        b.to_async(&rt).iter(|| async {
            let (tx, rx) = tokio::sync::oneshot::channel::<AnswerBatch>();
            tx.send(AnswerBatch::new([AnswerItem::selected("confirm", ["yes"])]))
                .unwrap();
            black_box(rx.await.unwrap())
        });
    });

    let (seam, _guards) = seam_with(0);
    c.bench_function("ask/answer_at_once", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(seam.ask(AskRequest::new([question()])).await.unwrap()) });
    });

    let mut group = c.benchmark_group("ask/declining");
    for declining in [0, 1, 2, 4, 8] {
        let (seam, _guards) = seam_with(declining);
        group.bench_with_input(BenchmarkId::from_parameter(declining), &seam, |b, seam| {
            b.to_async(&rt).iter(|| async {
                black_box(seam.ask(AskRequest::new([question()])).await.unwrap())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
