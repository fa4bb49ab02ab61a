package tessera

// #include <stdlib.h>
// #include "tessera/tessera.h"
import "C"

import (
	"errors"
	"unsafe"
)

// Status is the C ABI's status code (tessera_status).
type Status int

// The statuses, as tessera.h numbers them.
const (
	StatusOK              Status = C.TESSERA_OK
	StatusInvalidArgument Status = C.TESSERA_INVALID_ARGUMENT
	StatusInvalidModel    Status = C.TESSERA_INVALID_MODEL
	StatusIO              Status = C.TESSERA_IO
	StatusOutOfMemory     Status = C.TESSERA_OUT_OF_MEMORY
	StatusUnsupported     Status = C.TESSERA_UNSUPPORTED
	StatusCancelled       Status = C.TESSERA_CANCELLED
	StatusInternal        Status = C.TESSERA_INTERNAL
)

// String is the status's name ("invalid_argument", ...).
func (s Status) String() string {
	return C.GoString(C.tessera_status_name(C.tessera_status(s)))
}

// Error is what the engine reports: its status and its message (naming the file, option or
// prompt at fault).
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "tessera: " + e.Status.String()
	}
	return "tessera: " + e.Message
}

// Is makes errors.Is(err, ErrInvalidArgument) (and the other sentinels) match any error of that
// status.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// Sentinels for errors.Is: every *Error of the status matches.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrInvalidModel    = &Error{Status: StatusInvalidModel}
	ErrIO              = &Error{Status: StatusIO}
	ErrOutOfMemory     = &Error{Status: StatusOutOfMemory}
	ErrUnsupported     = &Error{Status: StatusUnsupported}
	ErrCancelled       = &Error{Status: StatusCancelled}
	ErrInternal        = &Error{Status: StatusInternal}
)

// ErrClosed is returned by calls on a closed Model (and by calls that Close cancelled).
var ErrClosed = errors.New("tessera: the model is closed")

// errorFrom takes a status and the C message (freed here); nil for StatusOK.
func errorFrom(st C.tessera_status, msg *C.char) error {
	text := ""
	if msg != nil {
		text = C.GoString(msg)
		C.tessera_string_free(msg)
	}
	if st == C.TESSERA_OK {
		return nil
	}
	return &Error{Status: Status(st), Message: text}
}

// cArena holds C memory for one call's arguments, freed together after the call (the C side
// copies what it keeps). C memory, because cgo forbids passing Go memory that holds Go pointers.
type cArena struct{ ptrs []unsafe.Pointer }

func (a *cArena) alloc(n int) unsafe.Pointer {
	if n == 0 {
		n = 1
	}
	p := C.calloc(C.size_t(n), 1)
	if p == nil {
		panic("tessera: out of C memory")
	}
	a.ptrs = append(a.ptrs, p)
	return p
}

func (a *cArena) str(s string) *C.char {
	p := a.alloc(len(s) + 1)
	copy(unsafe.Slice((*byte)(p), len(s)), s)
	return (*C.char)(p)
}

func (a *cArena) strs(ss []string) **C.char {
	p := (**C.char)(a.alloc(len(ss) * int(unsafe.Sizeof((*C.char)(nil)))))
	arr := unsafe.Slice(p, len(ss))
	for i, s := range ss {
		arr[i] = a.str(s)
	}
	return p
}

func (a *cArena) ids(ids []int32) *C.int32_t {
	p := (*C.int32_t)(a.alloc(len(ids) * 4))
	arr := unsafe.Slice(p, len(ids))
	for i, id := range ids {
		arr[i] = C.int32_t(id)
	}
	return p
}

func (a *cArena) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
	a.ptrs = nil
}
