//! object_store's own integration suite (`object_store::integration`, feature
//! `integration`) against the simulated GCS behind its ObjectStore facade: the model is
//! checked by tests nobody here wrote. One fresh store per function.
//!
//! Not run, and why:
//! * `put_get_attributes`: the model keeps no attributes (the facade answers
//!   `NotImplemented`, which that function does not accept).
//! * `multipart`, `multipart_with_opts`, `multipart_put_part_out_of_order`,
//!   `multipart_out_of_order`: they need the low-level `MultipartStore` trait (upload ids,
//!   part ids), which GCS's XML multipart API has and the model does not; plain
//!   `put_multipart` is covered by `stream_get` and `multipart_race_condition`.

use object_store::integration::*;
use object_store::DynObjectStore;
use slotlog_tests::sim_store::SimStore;

fn store() -> SimStore {
    SimStore::new(5)
}

#[tokio::test]
async fn object_store_put_get_delete_list() {
    put_get_delete_list(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_get_opts() {
    get_opts(&store()).await;
}

#[tokio::test]
async fn object_store_put_opts_with_update() {
    put_opts(&store(), true).await;
}

#[tokio::test]
async fn object_store_list_uses_directories_correctly() {
    list_uses_directories_correctly(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_list_with_delimiter() {
    list_with_delimiter(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_list_with_offset_exclusivity() {
    list_with_offset_exclusivity(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_list_paginated() {
    let s = store();
    list_paginated(&s, &s).await;
}

#[tokio::test]
async fn object_store_get_nonexistent_object() {
    let err = get_nonexistent_object(&store() as &DynObjectStore, None).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
}

#[tokio::test]
async fn object_store_rename_and_copy() {
    rename_and_copy(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_copy_if_not_exists() {
    copy_if_not_exists(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_copy_rename_nonexistent_object() {
    copy_rename_nonexistent_object(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_stream_get() {
    stream_get(&store() as &DynObjectStore).await;
}

#[tokio::test]
async fn object_store_multipart_race_condition() {
    // The last upload to complete wins, as on GCS.
    multipart_race_condition(&store(), true).await;
}
