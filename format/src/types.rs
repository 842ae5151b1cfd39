//! JFR type ids: one namespace for every class the metadata declares.
//!
//! Ids are stable across chunks and across releases of this crate, so that a
//! file written by one version reads the same as one written by the next.
//!
//! | range        | what                                                        |
//! |--------------|-------------------------------------------------------------|
//! | 0, 1         | reserved record types: metadata (0) and checkpoint (1)      |
//! | 4 ..= 12     | primitives and `java.lang.String`                           |
//! | 20 ..= 99    | built-in structured types (threads, classes, stack traces)  |
//! | 100 ..= 199  | built-in JDK event types flightrec emits                    |
//! | 200 ..= 249  | annotation types                                            |
//! | 250 ..= 299  | setting types                                               |
//! | 1000 ..      | types declared at run time (custom events and value types)  |

use std::fmt;

/// A JFR type id, unique within a chunk's metadata.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(pub u64);

impl fmt::Debug for TypeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TypeId({})", self.0)
    }
}

impl fmt::Display for TypeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl TypeId {
    /// Record type of the metadata event.
    pub const METADATA: TypeId = TypeId(0);
    /// Record type of a checkpoint (constant-pool) event.
    pub const CHECKPOINT: TypeId = TypeId(1);

    /// `boolean`
    pub const BOOLEAN: TypeId = TypeId(4);
    /// `char`
    pub const CHAR: TypeId = TypeId(5);
    /// `float`
    pub const FLOAT: TypeId = TypeId(6);
    /// `double`
    pub const DOUBLE: TypeId = TypeId(7);
    /// `byte`
    pub const BYTE: TypeId = TypeId(8);
    /// `short`
    pub const SHORT: TypeId = TypeId(9);
    /// `int`
    pub const INT: TypeId = TypeId(10);
    /// `long`
    pub const LONG: TypeId = TypeId(11);
    /// `java.lang.String`
    pub const STRING: TypeId = TypeId(12);

    /// `java.lang.Thread`
    pub const THREAD: TypeId = TypeId(20);
    /// `jdk.types.ThreadGroup`
    pub const THREAD_GROUP: TypeId = TypeId(21);
    /// `java.lang.Class`
    pub const CLASS: TypeId = TypeId(22);
    /// `jdk.types.ClassLoader`
    pub const CLASS_LOADER: TypeId = TypeId(23);
    /// `jdk.types.Package`
    pub const PACKAGE: TypeId = TypeId(24);
    /// `jdk.types.Module`
    pub const MODULE: TypeId = TypeId(25);
    /// `jdk.types.Symbol`
    pub const SYMBOL: TypeId = TypeId(26);
    /// `jdk.types.Method`
    pub const METHOD: TypeId = TypeId(27);
    /// `jdk.types.StackFrame`
    pub const STACK_FRAME: TypeId = TypeId(28);
    /// `jdk.types.StackTrace`
    pub const STACK_TRACE: TypeId = TypeId(29);
    /// `jdk.types.FrameType`
    pub const FRAME_TYPE: TypeId = TypeId(30);
    /// `jdk.types.ThreadState`
    pub const THREAD_STATE: TypeId = TypeId(31);
    /// `jdk.types.OldObject`: a sampled allocation still alive.
    pub const OLD_OBJECT: TypeId = TypeId(45);
    /// `jdk.types.Reference` (declared for `jdk.types.OldObject`; always null).
    pub const REFERENCE: TypeId = TypeId(46);
    /// `jdk.types.OldObjectArray` (declared for `jdk.types.Reference`).
    pub const OLD_OBJECT_ARRAY: TypeId = TypeId(47);
    /// `jdk.types.OldObjectField` (declared for `jdk.types.Reference`).
    pub const OLD_OBJECT_FIELD: TypeId = TypeId(48);
    /// `jdk.types.OldObjectGcRoot` (declared for `jdk.OldObjectSample`; always null).
    pub const OLD_OBJECT_GC_ROOT: TypeId = TypeId(49);

    /// `jdk.ExecutionSample`
    pub const EXECUTION_SAMPLE: TypeId = TypeId(101);
    /// `jdk.CPUTimeSample`
    pub const CPU_TIME_SAMPLE: TypeId = TypeId(102);
    /// `jdk.CPUTimeSamplesLost`
    pub const CPU_TIME_SAMPLES_LOST: TypeId = TypeId(103);
    /// `jdk.ActiveSetting`
    pub const ACTIVE_SETTING: TypeId = TypeId(104);
    /// `jdk.ActiveRecording`
    pub const ACTIVE_RECORDING: TypeId = TypeId(105);
    /// `jdk.DataLoss`
    pub const DATA_LOSS: TypeId = TypeId(106);
    /// `flightrec.EventsLost`: events dropped, by cause.
    pub const EVENTS_LOST: TypeId = TypeId(107);
    /// `jdk.OSInformation`
    pub const OS_INFORMATION: TypeId = TypeId(108);
    /// `jdk.CPUInformation`
    pub const CPU_INFORMATION: TypeId = TypeId(109);
    /// `jdk.ThreadStart`
    pub const THREAD_START: TypeId = TypeId(110);
    /// `jdk.ThreadEnd`
    pub const THREAD_END: TypeId = TypeId(111);
    /// `jdk.MethodTiming` (JEP 520): invocation counts and times per method.
    pub const METHOD_TIMING: TypeId = TypeId(120);
    /// `jdk.MethodTrace` (JEP 520): one traced call with its caller's stack.
    pub const METHOD_TRACE: TypeId = TypeId(121);
    /// `jdk.ObjectAllocationSample`: a sampled allocation and its weight.
    pub const OBJECT_ALLOCATION_SAMPLE: TypeId = TypeId(130);
    /// `jdk.ThreadAllocationStatistics`: bytes a thread allocated so far.
    pub const THREAD_ALLOCATION_STATISTICS: TypeId = TypeId(131);
    /// `jdk.OldObjectSample`: a sampled allocation not freed at chunk end.
    pub const OLD_OBJECT_SAMPLE: TypeId = TypeId(132);
    /// `flightrec.RecorderStatistics`: the recorder's own cost (CPU of its
    /// threads and of the signal handler, bytes, buffer occupancy, rates).
    pub const RECORDER_STATISTICS: TypeId = TypeId(119);

    // 140 ..= 169: what the process and the machine were doing
    // (`builtin::system`; periodic and per-chunk events, panics).
    /// `jdk.PhysicalMemory`
    pub const PHYSICAL_MEMORY: TypeId = TypeId(140);
    /// `jdk.VirtualizationInformation`
    pub const VIRTUALIZATION_INFORMATION: TypeId = TypeId(141);
    /// `jdk.ContainerConfiguration`
    pub const CONTAINER_CONFIGURATION: TypeId = TypeId(142);
    /// `jdk.NativeLibrary`
    pub const NATIVE_LIBRARY: TypeId = TypeId(143);
    /// `jdk.InitialEnvironmentVariable`
    pub const INITIAL_ENVIRONMENT_VARIABLE: TypeId = TypeId(144);
    /// `flightrec.ProcessInformation`: pid, executable and command line.
    pub const PROCESS_INFORMATION: TypeId = TypeId(145);
    /// `jdk.CPULoad`
    pub const CPU_LOAD: TypeId = TypeId(146);
    /// `jdk.ThreadCPULoad`
    pub const THREAD_CPU_LOAD: TypeId = TypeId(147);
    /// `jdk.ResidentSetSize`
    pub const RESIDENT_SET_SIZE: TypeId = TypeId(148);
    /// `jdk.ContainerCPUUsage`
    pub const CONTAINER_CPU_USAGE: TypeId = TypeId(149);
    /// `jdk.ContainerMemoryUsage`
    pub const CONTAINER_MEMORY_USAGE: TypeId = TypeId(150);
    /// `jdk.ContainerCPUThrottling`
    pub const CONTAINER_CPU_THROTTLING: TypeId = TypeId(151);
    /// `jdk.ContainerIOUsage`
    pub const CONTAINER_IO_USAGE: TypeId = TypeId(152);
    /// `jdk.NetworkUtilization`
    pub const NETWORK_UTILIZATION: TypeId = TypeId(153);
    /// `jdk.CPUTimeStampCounter`
    pub const CPU_TIME_STAMP_COUNTER: TypeId = TypeId(154);
    /// `jdk.JavaThreadStatistics`
    pub const JAVA_THREAD_STATISTICS: TypeId = TypeId(155);
    /// `jdk.Shutdown`
    pub const SHUTDOWN: TypeId = TypeId(156);
    /// `jdk.JavaErrorThrow`: a panic.
    pub const JAVA_ERROR_THROW: TypeId = TypeId(157);
    /// `jdk.JavaExceptionThrow` (declared, never written: the exception
    /// views read it beside `jdk.JavaErrorThrow`).
    pub const JAVA_EXCEPTION_THROW: TypeId = TypeId(158);
    /// `jdk.ExceptionStatistics`: panics so far.
    pub const EXCEPTION_STATISTICS: TypeId = TypeId(159);

    // 185 ..= 194: where threads waited (`builtin::lock`).
    /// `jdk.JavaMonitorEnter`: a wait to enter a lock, over its threshold.
    pub const JAVA_MONITOR_ENTER: TypeId = TypeId(185);
    /// `jdk.ThreadPark`: a wait on a condition variable, over its threshold.
    pub const THREAD_PARK: TypeId = TypeId(186);
    /// `jdk.JavaMonitorWait` (declared, never written: `jfr view
    /// latencies-by-type` reads it beside the lock events, as the four
    /// below).
    pub const JAVA_MONITOR_WAIT: TypeId = TypeId(187);
    /// `jdk.ThreadSleep` (declared, never written).
    pub const THREAD_SLEEP: TypeId = TypeId(188);
    /// `jdk.SocketRead` (declared, never written).
    pub const SOCKET_READ: TypeId = TypeId(189);
    /// `jdk.SocketWrite` (declared, never written).
    pub const SOCKET_WRITE: TypeId = TypeId(190);
    /// `jdk.FileRead` (declared, never written).
    pub const FILE_READ: TypeId = TypeId(191);
    /// `jdk.FileWrite` (declared, never written).
    pub const FILE_WRITE: TypeId = TypeId(192);

    /// `jdk.jfr.Label`
    pub const LABEL: TypeId = TypeId(200);
    /// `jdk.jfr.Description`
    pub const DESCRIPTION: TypeId = TypeId(201);
    /// `jdk.jfr.Category`
    pub const CATEGORY: TypeId = TypeId(202);
    /// `jdk.jfr.Name`
    pub const NAME: TypeId = TypeId(203);
    /// `jdk.jfr.Experimental`
    pub const EXPERIMENTAL: TypeId = TypeId(204);
    /// `jdk.jfr.Enabled`
    pub const ENABLED: TypeId = TypeId(205);
    /// `jdk.jfr.StackTrace`
    pub const STACK_TRACE_ANNOTATION: TypeId = TypeId(206);
    /// `jdk.jfr.Threshold`
    pub const THRESHOLD: TypeId = TypeId(207);
    /// `jdk.jfr.Period`
    pub const PERIOD: TypeId = TypeId(208);
    /// `jdk.jfr.Throttle`
    pub const THROTTLE: TypeId = TypeId(209);
    /// `jdk.jfr.ContentType`
    pub const CONTENT_TYPE: TypeId = TypeId(210);
    /// `jdk.jfr.Timestamp`
    pub const TIMESTAMP: TypeId = TypeId(211);
    /// `jdk.jfr.Timespan`
    pub const TIMESPAN: TypeId = TypeId(212);
    /// `jdk.jfr.DataAmount`
    pub const DATA_AMOUNT: TypeId = TypeId(213);
    /// `jdk.jfr.Unsigned`
    pub const UNSIGNED: TypeId = TypeId(214);
    /// `jdk.jfr.Percentage`
    pub const PERCENTAGE: TypeId = TypeId(215);
    /// `jdk.jfr.Frequency`
    pub const FREQUENCY: TypeId = TypeId(216);
    /// `jdk.jfr.MemoryAddress`
    pub const MEMORY_ADDRESS: TypeId = TypeId(217);
    /// `jdk.jfr.Contextual`
    pub const CONTEXTUAL: TypeId = TypeId(218);

    /// `jdk.settings.Enabled`
    pub const SETTING_ENABLED: TypeId = TypeId(250);
    /// `jdk.settings.StackTrace`
    pub const SETTING_STACK_TRACE: TypeId = TypeId(251);
    /// `jdk.settings.Threshold`
    pub const SETTING_THRESHOLD: TypeId = TypeId(252);
    /// `jdk.settings.Period`
    pub const SETTING_PERIOD: TypeId = TypeId(253);
    /// `jdk.settings.Throttle`
    pub const SETTING_THROTTLE: TypeId = TypeId(254);

    /// The first id handed out to types declared at run time.
    pub const FIRST_DYNAMIC: TypeId = TypeId(1000);

    /// True for ids reserved for record kinds or the built-in table.
    pub const fn is_reserved(self) -> bool {
        self.0 < Self::FIRST_DYNAMIC.0
    }
}

/// Method modifier `ACC_NATIVE`, given to frames of native code.
pub const ACC_NATIVE: i32 = 0x100;
/// Method/class modifier `ACC_PUBLIC`.
pub const ACC_PUBLIC: i32 = 0x1;
