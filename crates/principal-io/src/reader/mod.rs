//! The top of the reader stack: a data set of one or more shards, each opened by its format's
//! reader, streamed a chunk at a time ([`ChunkReader`](crate::ChunkReader)), read pass after
//! pass with read-ahead ([`FileSource`](crate::FileSource)), or read whole
//! ([`read_table`](crate::read_table)).

pub(crate) mod chunk_reader;
pub(crate) mod file_source;
pub(crate) mod part;
pub(crate) mod shard;
