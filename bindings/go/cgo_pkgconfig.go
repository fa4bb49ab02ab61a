//go:build !tessera_cgo_flags

package tessera

// The library and header through pkg-config: tessera.pc once installed (cmake --install), or the
// build tree's tessera-uninstalled.pc with PKG_CONFIG_PATH=<build dir>. Build with
// -tags tessera_cgo_flags to give CGO_CFLAGS / CGO_LDFLAGS yourself instead (the README says how).

// #cgo pkg-config: tessera
import "C"
