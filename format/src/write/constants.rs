//! Writers for the values of the built-in constant pools, one function per
//! type, each writing the fields in the order [`crate::builtin`] declares.
//!
//! Keys are the caller's: this module only encodes values. Key 0 means
//! "null" in every reference below, and is never defined for the reference
//! pools (threads, thread groups, classes, loaders, packages, modules,
//! methods, stack traces).

use crate::write::encode::Sink;

/// A `java.lang.Thread` constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadValue<'a> {
    /// OS thread name.
    pub os_name: &'a str,
    /// OS thread id.
    pub os_thread_id: i64,
    /// Name shown by the JDK tools when `java_thread_id > 0`.
    pub java_name: Option<&'a str>,
    /// Thread id shown by the tools; must be > 0 for `java_name` to show.
    pub java_thread_id: i64,
    /// Key of the thread group, 0 for none.
    pub group: u64,
}

/// Writes a `java.lang.Thread` value.
pub fn write_thread(s: &mut impl Sink, t: &ThreadValue<'_>) {
    s.put_str(t.os_name);
    s.put_i64(t.os_thread_id);
    s.put_opt_str(t.java_name);
    s.put_i64(t.java_thread_id);
    s.put_varint(t.group);
    s.put_bool(false); // virtual
}

/// Writes a `jdk.types.ThreadGroup` value.
pub fn write_thread_group(s: &mut impl Sink, parent: u64, name: &str) {
    s.put_varint(parent);
    s.put_str(name);
}

/// Writes a `jdk.types.Symbol` value (a simple type: just the string).
pub fn write_symbol(s: &mut impl Sink, text: &str) {
    s.put_str(text);
}

/// A `java.lang.Class` constant; references are pool keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassValue {
    /// `jdk.types.ClassLoader` key, 0 for none.
    pub class_loader: u64,
    /// `jdk.types.Symbol` key of the name in internal form (`a/b/C`).
    pub name: u64,
    /// `jdk.types.Package` key, 0 for none.
    pub package: u64,
    /// Access flags.
    pub modifiers: i32,
    /// Hidden class.
    pub hidden: bool,
}

/// Writes a `java.lang.Class` value.
pub fn write_class(s: &mut impl Sink, c: &ClassValue) {
    s.put_varint(c.class_loader);
    s.put_varint(c.name);
    s.put_varint(c.package);
    s.put_i32(c.modifiers);
    s.put_bool(c.hidden);
}

/// Writes a `jdk.types.ClassLoader` value.
pub fn write_class_loader(s: &mut impl Sink, class: u64, name: u64) {
    s.put_varint(class);
    s.put_varint(name);
}

/// Writes a `jdk.types.Package` value.
pub fn write_package(s: &mut impl Sink, name: u64, module: u64, exported: bool) {
    s.put_varint(name);
    s.put_varint(module);
    s.put_bool(exported);
}

/// Writes a `jdk.types.Module` value (all references are keys).
pub fn write_module(s: &mut impl Sink, name: u64, version: u64, location: u64, class_loader: u64) {
    for key in [name, version, location, class_loader] {
        s.put_varint(key);
    }
}

/// A `jdk.types.Method` constant; references are pool keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodValue {
    /// `java.lang.Class` key of the declaring class (must be defined).
    pub class: u64,
    /// `jdk.types.Symbol` key of the method name.
    pub name: u64,
    /// `jdk.types.Symbol` key of a JVM descriptor such as `()V` (must
    /// contain `(` and `)`, or `jfr print` throws).
    pub descriptor: u64,
    /// Access flags, e.g. [`crate::types::ACC_NATIVE`].
    pub modifiers: i32,
    /// Hidden frames are filtered by JMC; keep false for native code.
    pub hidden: bool,
}

/// Writes a `jdk.types.Method` value.
pub fn write_method(s: &mut impl Sink, m: &MethodValue) {
    s.put_varint(m.class);
    s.put_varint(m.name);
    s.put_varint(m.descriptor);
    s.put_i32(m.modifiers);
    s.put_bool(m.hidden);
}

/// One `jdk.types.StackFrame` (written inline in stack traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameValue {
    /// `jdk.types.Method` key (must be defined).
    pub method: u64,
    /// Source line, -1 if unknown.
    pub line: i32,
    /// Bytecode index; flightrec writes the offset in the function, or 0.
    pub bytecode_index: i32,
    /// `jdk.types.FrameType` key.
    pub frame_type: u64,
}

/// Writes a `jdk.types.StackTrace` value: frame 0 is the innermost frame.
pub fn write_stack_trace(s: &mut impl Sink, truncated: bool, frames: &[FrameValue]) {
    s.put_bool(truncated);
    s.put_varint(frames.len() as u64);
    for f in frames {
        s.put_varint(f.method);
        // Unknown lines go out as the 32-bit pattern of -1, as HotSpot writes
        // them (some readers reject the 64-bit form).
        s.put_varint(u64::from(f.line as u32));
        s.put_varint(u64::from(f.bytecode_index as u32));
        s.put_varint(f.frame_type);
    }
}

/// Writes a simple-type string constant (`jdk.types.FrameType`,
/// `jdk.types.ThreadState`).
pub fn write_simple_string(s: &mut impl Sink, text: &str) {
    s.put_str(text);
}

/// Frame type keys and names, as HotSpot numbers them (plus flightrec's).
pub mod frame_type {
    /// Interpreted (unused by native code).
    pub const INTERPRETED: (u64, &str) = (0, "Interpreted");
    /// JIT compiled.
    pub const JIT_COMPILED: (u64, &str) = (1, "JIT compiled");
    /// An inlined call, resolved from debug info.
    pub const INLINED: (u64, &str) = (2, "Inlined");
    /// Native code (all of flightrec's physical frames).
    pub const NATIVE: (u64, &str) = (3, "Native");
    /// Every frame type, for writing the pool.
    pub const ALL: [(u64, &str); 4] = [INTERPRETED, JIT_COMPILED, INLINED, NATIVE];
}

/// Thread state keys and names (JVMTI bit masks, as HotSpot numbers them).
pub mod thread_state {
    /// Running or runnable.
    pub const RUNNABLE: (u64, &str) = (5, "STATE_RUNNABLE");
    /// Sleeping.
    pub const SLEEPING: (u64, &str) = (225, "STATE_SLEEPING");
    /// Parked / blocked in the kernel waiting.
    pub const PARKED: (u64, &str) = (657, "STATE_PARKED");
    /// Every thread state, for writing the pool.
    pub const ALL: [(u64, &str); 3] = [RUNNABLE, SLEEPING, PARKED];
}
