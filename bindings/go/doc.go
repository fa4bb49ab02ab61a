// Package tessera runs Hugging Face-format language models through tessera's C ABI
// (include/tessera/tessera.h, libtessera.so).
//
// Two interfaces, those of the engine tessera replaces:
//
//   - SimpleBackend (NewBackend): Generate and Chat return whole texts; Name, Available.
//   - TextModel (LoadModel): Generate and Chat stream Tokens as a Seq (the shape of iter.Seq),
//     Err tells how the last one ended; Classify, BatchGenerate, Metrics, Info, Close.
//
// Every call may run from many goroutines at once: the engine's continuous-batching scheduler
// batches them. A context's cancellation cancels its request at the scheduler's next step and
// frees its KV blocks; so does a stream consumer that stops early. Errors from the engine are
// *Error values with its message and Status (errors.Is(err, ErrInvalidArgument) and so on).
// Model.Close frees the engine; a finalizer does it for a Model dropped without Close, as a
// safety net only.
//
// Tokens are pulled from the engine on the consuming goroutine (tessera_stream_next): no
// callback runs from an engine thread into Go.
package tessera
