//! The `SessionStore` contract suite (`ask_user_testkit::store_contract`), run against both stores
//! of this crate.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use ask_user_testkit::store_contract::StoreHarness;
use session_log::{JsonlStore, MemoryStore, SessionStore};

/// JSONL stores in temporary directories that live as long as the harness.
struct Jsonl {
    dirs: Mutex<Vec<tempfile::TempDir>>,
}

impl StoreHarness for Jsonl {
    fn store(&self) -> Arc<dyn SessionStore> {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::new(dir.path());
        self.dirs.lock().unwrap().push(dir);
        Arc::new(store)
    }

    fn append_raw(&self, store: &dyn SessionStore, name: &str, bytes: &[u8]) -> bool {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(store.location(name))
            .unwrap();
        file.write_all(bytes).unwrap();
        true
    }
}

/// In-memory stores; raw bytes are planted through `MemoryStore::insert_bytes`.
struct Memory {
    stores: Mutex<Vec<MemoryStore>>,
}

impl StoreHarness for Memory {
    fn store(&self) -> Arc<dyn SessionStore> {
        let store = MemoryStore::new();
        self.stores.lock().unwrap().push(store.clone());
        Arc::new(store)
    }

    fn append_raw(&self, store: &dyn SessionStore, name: &str, bytes: &[u8]) -> bool {
        let location = store.location(name);
        let stores = self.stores.lock().unwrap();
        let memory = stores
            .iter()
            .find(|m| m.location(name) == location && m.bytes(name).is_some())
            .expect("a store of this harness");
        let mut all = memory.bytes(name).unwrap();
        all.extend_from_slice(bytes);
        memory.insert_bytes(name, all);
        true
    }
}

mod jsonl {
    use super::*;
    ask_user_testkit::store_contract_tests!(Jsonl {
        dirs: Mutex::new(Vec::new())
    });
}

mod memory {
    use super::*;
    ask_user_testkit::store_contract_tests!(Memory {
        stores: Mutex::new(Vec::new())
    });
}
