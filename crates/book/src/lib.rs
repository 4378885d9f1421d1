/*!
The book's Rust examples, run as doc-tests: every chapter of `docs/src` with a ```` ```rust ````
block is included below, so `cargo test` (and so `scripts/test`) compiles and runs its examples
against the workspace's crates, already built for the other tests. `scripts/book.py check` fails
when a chapter with Rust examples is missing here.

In a chapter, `# ` hides a line of an example in the book (as in rustdoc), and
```` ```rust,ignore ```` leaves a block untested.
*/

#[doc = include_str!("../../../docs/src/accounting.md")]
pub mod accounting {}

#[doc = include_str!("../../../docs/src/algorithms/cape.md")]
pub mod cape {}
