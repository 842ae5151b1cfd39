//! The writers of the built-in event types: one struct per type the
//! recorder writes, whose [`BuiltinEvent::put_fields`] is the one place that
//! type's field order is written down.
//!
//! Each writer is declared once, as the list of its fields: the struct's
//! members, their JFR names ([`BuiltinEvent::FIELDS`]) and the order
//! [`BuiltinEvent::put_fields`] writes them in all come from that list, and
//! the tests of this module check each list against the type table
//! ([`crate::builtin`]): the names in order, and a record written with
//! distinct values read back through the table's metadata, field by field.
//!
//! A value is written by its Rust type: `i64` as a JFR `long`, `i32` as an
//! `int`, `bool` as a `boolean`, `&str` and `Option<&str>` as a string
//! (`None` is null), `u64` as a constant-pool key (the field is pooled in
//! the table). A trailing `Option<i64>` is a field that the table has only
//! in some recordings (`contextId`, see [`crate::builtin::builtin_types_for`]):
//! `None` writes nothing.
//!
//! ```
//! use jfr_format::write::events::{ActiveSetting, BuiltinEvent};
//! let s = ActiveSetting { start_time: 5, id: 101, name: "enabled", value: "true" };
//! let mut buf = [0u8; 32];
//! let n = s.encode(&mut buf).unwrap(); // the hot path's encoder
//! let mut v = Vec::new();
//! assert_eq!(s.append(&mut v), n); // a record appended to a Vec
//! assert_eq!(&buf[..n], &v[..]);
//! ```

use crate::types::TypeId;
use crate::write::encode::Sink;
use crate::write::record::{EventEncoder, begin_record, end_record};

/// A built-in event type's writer: its type, its fields in the type
/// table's order, and how it writes them.
pub trait BuiltinEvent {
    /// The event type.
    const TYPE: TypeId;
    /// The JFR names of the fields [`put_fields`](Self::put_fields) writes,
    /// in order: the type table's fields of [`TYPE`](Self::TYPE).
    const FIELDS: &'static [&'static str];

    /// Writes the fields, the record's payload after its type id.
    fn put_fields<S: Sink>(&self, s: &mut S);

    /// Encodes the record at the start of `buf` with [`EventEncoder`],
    /// without allocating: its length, or `None` if it did not fit.
    #[inline]
    fn encode(&self, buf: &mut [u8]) -> Option<usize> {
        let mut e = EventEncoder::begin(buf, Self::TYPE);
        self.put_fields(&mut e);
        e.finish()
    }

    /// Appends the record to `out`; returns its length.
    #[inline]
    fn append(&self, out: &mut Vec<u8>) -> usize {
        let r = begin_record(out, Self::TYPE);
        self.put_fields(out);
        end_record(out, r)
    }
}

/// How a field's Rust type is written (see the module docs), and which
/// table fields it may stand for.
trait Put {
    /// What the type writes, checked against the table's field.
    #[cfg(test)]
    const KIND: Kind;
    fn put<S: Sink>(&self, s: &mut S);
}

/// What a field's Rust type writes.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A `long` (`i64`), or a trailing optional one (`Option<i64>`).
    Long,
    /// An `int`.
    Int,
    /// A `boolean`.
    Boolean,
    /// A `float`.
    Float,
    /// A string (possibly null).
    String,
    /// A constant-pool key: the field is pooled.
    Key,
}

impl Put for i64 {
    #[cfg(test)]
    const KIND: Kind = Kind::Long;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        s.put_i64(*self);
    }
}

impl Put for i32 {
    #[cfg(test)]
    const KIND: Kind = Kind::Int;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        s.put_i32(*self);
    }
}

impl Put for u64 {
    #[cfg(test)]
    const KIND: Kind = Kind::Key;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        s.put_varint(*self);
    }
}

impl Put for f32 {
    #[cfg(test)]
    const KIND: Kind = Kind::Float;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        s.put_f32(*self);
    }
}

impl Put for bool {
    #[cfg(test)]
    const KIND: Kind = Kind::Boolean;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        s.put_bool(*self);
    }
}

impl Put for &str {
    #[cfg(test)]
    const KIND: Kind = Kind::String;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        s.put_str(self);
    }
}

impl Put for Option<&str> {
    #[cfg(test)]
    const KIND: Kind = Kind::String;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        s.put_opt_str(*self);
    }
}

impl Put for Option<i64> {
    #[cfg(test)]
    const KIND: Kind = Kind::Long;
    #[inline(always)]
    fn put<S: Sink>(&self, s: &mut S) {
        if let Some(v) = self {
            s.put_i64(*v);
        }
    }
}

/// Declares writers: `Name<'a>? = TYPE_ID { field: Type = "jfrName", .. }`.
macro_rules! builtin_events {
    ($(
        $(#[$doc:meta])*
        $name:ident $(<$lt:lifetime>)? = $ty:ident {
            $( $(#[$fdoc:meta])* $field:ident : $fty:ty = $jfr:literal ),* $(,)?
        }
    )*) => {
        /// Every writer: its type, field names and what each writes.
        #[cfg(test)]
        const ALL: &[(TypeId, &[&str], &[Kind])] = &[$(
            (TypeId::$ty, <$name as BuiltinEvent>::FIELDS, $name::KINDS),
        )*];
    $(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct $name $(<$lt>)? {
            $( $(#[$fdoc])* pub $field: $fty, )*
        }

        impl $(<$lt>)? BuiltinEvent for $name $(<$lt>)? {
            const TYPE: TypeId = TypeId::$ty;
            const FIELDS: &'static [&'static str] = &[$($jfr),*];

            #[inline(always)]
            fn put_fields<S: Sink>(&self, s: &mut S) {
                $( Put::put(&self.$field, s); )*
            }
        }

        impl $(<$lt>)? $name $(<$lt>)? {
            /// What each field writes, in order.
            #[cfg(test)]
            const KINDS: &'static [Kind] = &[$(<$fty as Put>::KIND),*];
        }
    )*};
}

builtin_events! {
    /// `jdk.ExecutionSample`: a sample of a thread's stack by wall-clock
    /// or CPU-time sampling.
    ExecutionSample = EXECUTION_SAMPLE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Thread key.
        sampled_thread: u64 = "sampledThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Thread-state key.
        state: u64 = "state",
        /// The label set (0: none), if the recording's samples carry it.
        context_id: Option<i64> = "contextId",
    }

    /// `jdk.CPUTimeSample`: a sample taken when a thread's CPU timer
    /// expired.
    CpuTimeSample = CPU_TIME_SAMPLE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// The stack could not be walked.
        failed: bool = "failed",
        /// The CPU time the sample stands for, in ticks.
        sampling_period: i64 = "samplingPeriod",
        /// The JDK's safepoint bias flag (never, for native stacks).
        biased: bool = "biased",
        /// The label set (0: none), if the recording's samples carry it.
        context_id: Option<i64> = "contextId",
    }

    /// `jdk.CPUTimeSamplesLost`.
    CpuTimeSamplesLost = CPU_TIME_SAMPLES_LOST {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Samples lost.
        lost_samples: i32 = "lostSamples",
        /// Thread key.
        event_thread: u64 = "eventThread",
    }

    /// `jdk.ActiveSetting`: one setting of an event type in force.
    ActiveSetting<'a> = ACTIVE_SETTING {
        /// Ticks.
        start_time: i64 = "startTime",
        /// The event type's id.
        id: i64 = "id",
        /// The setting's name (`enabled`, `threshold`, ...).
        name: &'a str = "name",
        /// Its value as the JDK writes it.
        value: &'a str = "value",
    }

    /// `jdk.ActiveRecording`: the recording and its limits (0: none).
    ActiveRecording<'a> = ACTIVE_RECORDING {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Recording id.
        id: i64 = "id",
        /// Recording name.
        name: &'a str = "name",
        /// Where the recording is dumped, if anywhere.
        destination: Option<&'a str> = "destination",
        /// Recorded to disk.
        disk: bool = "disk",
        /// Milliseconds.
        max_age: i64 = "maxAge",
        /// Milliseconds.
        flush_interval: i64 = "flushInterval",
        /// Bytes.
        max_size: i64 = "maxSize",
        /// Milliseconds since the epoch.
        recording_start: i64 = "recordingStart",
        /// Milliseconds.
        recording_duration: i64 = "recordingDuration",
    }

    /// `jdk.DataLoss`: bytes of events dropped.
    DataLoss = DATA_LOSS {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Bytes lost since the last report.
        amount: i64 = "amount",
        /// Bytes lost since the start.
        total: i64 = "total",
    }

    /// `flightrec.EventsLost`: events dropped for one cause.
    EventsLost<'a> = EVENTS_LOST {
        /// Ticks.
        start_time: i64 = "startTime",
        /// The cause's name.
        cause: &'a str = "cause",
        /// Events lost since the last report.
        events: i64 = "events",
        /// Their bytes.
        bytes: i64 = "bytes",
        /// Events lost for this cause since the start.
        total_events: i64 = "totalEvents",
    }

    /// `jdk.ThreadStart`.
    ThreadStart = THREAD_START {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Thread key of the thread that writes the event.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Thread key of the new thread.
        thread: u64 = "thread",
        /// Thread key of its creator (0: unknown).
        parent_thread: u64 = "parentThread",
    }

    /// `jdk.ThreadEnd`.
    ThreadEnd = THREAD_END {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Thread key of the thread that writes the event.
        event_thread: u64 = "eventThread",
        /// Thread key of the thread that ended.
        thread: u64 = "thread",
    }

    /// `jdk.MethodTiming`: one timed method's calls over a period.
    MethodTiming = METHOD_TIMING {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Method key.
        method: u64 = "method",
        /// Calls.
        invocations: i64 = "invocations",
        /// Ticks.
        minimum: i64 = "minimum",
        /// Ticks.
        average: i64 = "average",
        /// Ticks.
        maximum: i64 = "maximum",
    }

    /// `jdk.MethodTrace`: one traced call.
    MethodTrace = METHOD_TRACE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Ticks.
        duration: i64 = "duration",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Method key.
        method: u64 = "method",
    }

    /// `jdk.ObjectAllocationSample`.
    ObjectAllocationSample = OBJECT_ALLOCATION_SAMPLE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Class key.
        object_class: u64 = "objectClass",
        /// Bytes the sample stands for.
        weight: i64 = "weight",
    }

    /// `jdk.ThreadAllocationStatistics`.
    ThreadAllocationStatistics = THREAD_ALLOCATION_STATISTICS {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Bytes allocated since the thread started.
        allocated: i64 = "allocated",
        /// Thread key.
        thread: u64 = "thread",
    }

    /// `jdk.OldObjectSample`: a sampled allocation still live.
    OldObjectSample = OLD_OBJECT_SAMPLE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Ticks.
        duration: i64 = "duration",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Ticks.
        allocation_time: i64 = "allocationTime",
        /// Bytes.
        object_size: i64 = "objectSize",
        /// Ticks.
        object_age: i64 = "objectAge",
        /// Bytes.
        last_known_heap_usage: i64 = "lastKnownHeapUsage",
        /// `jdk.types.OldObject` key.
        object: u64 = "object",
        /// `i32::MIN` for an object that is no array.
        array_elements: i32 = "arrayElements",
        /// `jdk.types.OldObjectGcRoot` key (0: none).
        root: u64 = "root",
    }

    /// `jdk.JavaMonitorEnter`: a wait to enter a lock.
    JavaMonitorEnter = JAVA_MONITOR_ENTER {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Ticks.
        duration: i64 = "duration",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Class key of the lock.
        monitor_class: u64 = "monitorClass",
        /// Thread key of the holder before (0: unknown).
        previous_owner: u64 = "previousOwner",
        /// The lock's address.
        address: i64 = "address",
    }

    /// `jdk.ThreadPark`: a wait on a condition variable.
    ThreadPark = THREAD_PARK {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Ticks.
        duration: i64 = "duration",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Class key of the condition variable.
        parked_class: u64 = "parkedClass",
        /// Nanoseconds (`i64::MIN`: none).
        timeout: i64 = "timeout",
        /// Milliseconds since the epoch (`i64::MIN`: none).
        until: i64 = "until",
        /// The condition variable's address.
        address: i64 = "address",
    }

    /// `jdk.OSInformation`.
    OsInformation<'a> = OS_INFORMATION {
        /// Ticks.
        start_time: i64 = "startTime",
        /// `uname` and the distribution's name.
        os_version: &'a str = "osVersion",
    }

    /// `jdk.CPUInformation`.
    CpuInformation<'a> = CPU_INFORMATION {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Architecture and notable features.
        cpu: &'a str = "cpu",
        /// The CPU model.
        description: &'a str = "description",
        /// Sockets.
        sockets: i32 = "sockets",
        /// Cores.
        cores: i32 = "cores",
        /// Hardware threads.
        hw_threads: i32 = "hwThreads",
    }

    /// `flightrec.RecorderStatistics`: what recording cost the process.
    RecorderStatistics = RECORDER_STATISTICS {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Nanoseconds.
        recorder_cpu_time: i64 = "recorderCpuTime",
        /// Nanoseconds.
        sampler_cpu_time: i64 = "samplerCpuTime",
        /// Nanoseconds.
        periodic_cpu_time: i64 = "periodicCpuTime",
        /// Nanoseconds.
        signal_handler_time: i64 = "signalHandlerTime",
        /// Nanoseconds.
        process_cpu_time: i64 = "processCpuTime",
        /// Fraction of the process's CPU time.
        overhead: f32 = "overhead",
        /// Bytes.
        bytes_written: i64 = "bytesWritten",
        /// Fraction of the buffer memory in use.
        buffer_occupancy: f32 = "bufferOccupancy",
        /// Events written since the start.
        events: i64 = "events",
        /// Events per second over the last period.
        events_per_second: i64 = "eventsPerSecond",
        /// Samples written since the start.
        samples: i64 = "samples",
        /// Samples per second over the last period.
        samples_per_second: i64 = "samplesPerSecond",
    }

    /// `jdk.PhysicalMemory`.
    PhysicalMemory = PHYSICAL_MEMORY {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Bytes.
        total_size: i64 = "totalSize",
        /// Bytes.
        used_size: i64 = "usedSize",
    }

    /// `jdk.VirtualizationInformation`.
    VirtualizationInformation<'a> = VIRTUALIZATION_INFORMATION {
        /// Ticks.
        start_time: i64 = "startTime",
        /// The JDK's name of what was detected.
        name: &'a str = "name",
    }

    /// `jdk.ContainerConfiguration` (-1: unknown or no limit).
    ContainerConfiguration<'a> = CONTAINER_CONFIGURATION {
        /// Ticks.
        start_time: i64 = "startTime",
        /// `cgroupv1` or `cgroupv2`.
        container_type: &'a str = "containerType",
        /// Microseconds.
        cpu_slice_period: i64 = "cpuSlicePeriod",
        /// Microseconds.
        cpu_quota: i64 = "cpuQuota",
        /// Shares.
        cpu_shares: i64 = "cpuShares",
        /// CPUs.
        effective_cpu_count: i64 = "effectiveCpuCount",
        /// Bytes.
        memory_soft_limit: i64 = "memorySoftLimit",
        /// Bytes.
        memory_limit: i64 = "memoryLimit",
        /// Bytes.
        swap_memory_limit: i64 = "swapMemoryLimit",
        /// Bytes.
        host_total_memory: i64 = "hostTotalMemory",
        /// Bytes.
        host_total_swap_memory: i64 = "hostTotalSwapMemory",
    }

    /// `jdk.NativeLibrary`: one mapped object.
    NativeLibrary<'a> = NATIVE_LIBRARY {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Its path.
        name: &'a str = "name",
        /// Lowest mapped address.
        base_address: i64 = "baseAddress",
        /// End of the mapping.
        top_address: i64 = "topAddress",
    }

    /// `jdk.InitialEnvironmentVariable`.
    InitialEnvironmentVariable<'a> = INITIAL_ENVIRONMENT_VARIABLE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Name.
        key: &'a str = "key",
        /// Value.
        value: &'a str = "value",
    }

    /// `flightrec.ProcessInformation`.
    ProcessInformation<'a> = PROCESS_INFORMATION {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Process id.
        pid: i64 = "pid",
        /// Executable path.
        executable: &'a str = "executable",
        /// Command line, arguments separated by spaces.
        command_line: &'a str = "commandLine",
    }

    /// `jdk.CPULoad`: fractions of the machine's CPU time.
    CpuLoad = CPU_LOAD {
        /// Ticks.
        start_time: i64 = "startTime",
        /// This process in user mode.
        jvm_user: f32 = "jvmUser",
        /// This process in kernel mode.
        jvm_system: f32 = "jvmSystem",
        /// The whole machine.
        machine_total: f32 = "machineTotal",
    }

    /// `jdk.ThreadCPULoad`: one thread's fractions of the machine's CPU time.
    ThreadCpuLoad = THREAD_CPU_LOAD {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// User mode.
        user: f32 = "user",
        /// Kernel mode.
        system: f32 = "system",
    }

    /// `jdk.ResidentSetSize`.
    ResidentSetSize = RESIDENT_SET_SIZE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Bytes.
        size: i64 = "size",
        /// Bytes.
        peak: i64 = "peak",
    }

    /// `jdk.ContainerCPUUsage` (-1: unknown).
    ContainerCpuUsage = CONTAINER_CPU_USAGE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Nanoseconds.
        cpu_time: i64 = "cpuTime",
        /// Nanoseconds.
        cpu_user_time: i64 = "cpuUserTime",
        /// Nanoseconds.
        cpu_system_time: i64 = "cpuSystemTime",
    }

    /// `jdk.ContainerMemoryUsage` (-1: unknown).
    ContainerMemoryUsage = CONTAINER_MEMORY_USAGE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Times the limit was hit.
        memory_fail_count: i64 = "memoryFailCount",
        /// Bytes.
        memory_usage: i64 = "memoryUsage",
        /// Bytes, memory and swap.
        swap_memory_usage: i64 = "swapMemoryUsage",
    }

    /// `jdk.ContainerCPUThrottling` (-1: unknown).
    ContainerCpuThrottling = CONTAINER_CPU_THROTTLING {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Periods elapsed.
        cpu_elapsed_slices: i64 = "cpuElapsedSlices",
        /// Periods throttled.
        cpu_throttled_slices: i64 = "cpuThrottledSlices",
        /// Nanoseconds.
        cpu_throttled_time: i64 = "cpuThrottledTime",
    }

    /// `jdk.ContainerIOUsage`.
    ContainerIoUsage = CONTAINER_IO_USAGE {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Requests.
        service_requests: i64 = "serviceRequests",
        /// Bytes.
        data_transferred: i64 = "dataTransferred",
    }

    /// `jdk.NetworkUtilization`: one interface.
    NetworkUtilization<'a> = NETWORK_UTILIZATION {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Interface name.
        network_interface: &'a str = "networkInterface",
        /// Bits per second.
        read_rate: i64 = "readRate",
        /// Bits per second.
        write_rate: i64 = "writeRate",
    }

    /// `jdk.CPUTimeStampCounter`.
    CpuTimeStampCounter = CPU_TIME_STAMP_COUNTER {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Ticks are read from the time stamp counter.
        fast_time_enabled: bool = "fastTimeEnabled",
        /// The counter is trusted.
        fast_time_auto_enabled: bool = "fastTimeAutoEnabled",
        /// Hertz.
        os_frequency: i64 = "osFrequency",
        /// Hertz.
        fast_time_frequency: i64 = "fastTimeFrequency",
    }

    /// `jdk.JavaThreadStatistics`.
    JavaThreadStatistics = JAVA_THREAD_STATISTICS {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Live threads.
        active_count: i64 = "activeCount",
        /// Daemon threads.
        daemon_count: i64 = "daemonCount",
        /// Threads started since the start.
        accumulated_count: i64 = "accumulatedCount",
        /// Most live at once.
        peak_count: i64 = "peakCount",
    }

    /// `jdk.Shutdown`.
    Shutdown<'a> = SHUTDOWN {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// Why.
        reason: &'a str = "reason",
    }

    /// `jdk.JavaErrorThrow`: a panic.
    JavaErrorThrow<'a> = JAVA_ERROR_THROW {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Thread key.
        event_thread: u64 = "eventThread",
        /// Stack-trace key (0: none).
        stack_trace: u64 = "stackTrace",
        /// The panic message.
        message: &'a str = "message",
        /// Class key of the panic's location.
        thrown_class: u64 = "thrownClass",
    }

    /// `jdk.ExceptionStatistics`.
    ExceptionStatistics = EXCEPTION_STATISTICS {
        /// Ticks.
        start_time: i64 = "startTime",
        /// Panics since the start.
        throwables: i64 = "throwables",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::builtin_types_for;
    use crate::read::decode::{Budget, Decoder, Refs};
    use crate::read::input::Input;
    use crate::read::metadata::read_metadata;
    use crate::read::{MetadataRecord, Value};
    use crate::write::metadata::Metadata;

    /// The type table's metadata as a reader sees it.
    fn table(context_ids: bool) -> MetadataRecord {
        let m = Metadata::builtin_for(context_ids);
        let mut buf = Vec::new();
        m.encode(&mut buf, 1, 0);
        read_metadata(&buf, 0, buf.len()).unwrap()
    }

    /// The table's field names of `ty`.
    fn table_fields(ty: TypeId, context_ids: bool) -> Vec<String> {
        let t = builtin_types_for(context_ids)
            .into_iter()
            .find(|t| t.id == ty)
            .unwrap_or_else(|| panic!("type {} is in the table", ty.0));
        t.fields.iter().map(|f| f.name.to_string()).collect()
    }

    /// Writes `ev` both ways, checks they agree, and reads the record back
    /// through the table: every byte consumed, the fields by name.
    fn read_back<E: BuiltinEvent>(ev: &E, meta: &MetadataRecord) -> Vec<(String, Value)> {
        let mut v = Vec::new();
        let n = ev.append(&mut v);
        assert_eq!(n, v.len());
        let mut buf = vec![0u8; n + 16];
        assert_eq!(ev.encode(&mut buf), Some(n));
        assert_eq!(&buf[..n], &v[..], "both framings write the same record");
        let mut inp = Input::new(&v, 0, v.len());
        assert_eq!(inp.varint().unwrap() as usize, n);
        assert_eq!(inp.varint().unwrap(), E::TYPE.0);
        let class = meta.class(E::TYPE).unwrap();
        let mut budget = Budget::new();
        let mut d = Decoder::new(meta, Refs::Raw, &mut budget);
        let fields = d.fields(&mut inp, &class.fields, 0).unwrap();
        assert_eq!(
            inp.remaining(),
            0,
            "{}: bytes left after the table's fields",
            class.name
        );
        fields
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect()
    }

    fn long(v: i64) -> Value {
        Value::Long(v)
    }

    fn key(type_id: TypeId, key: u64) -> Value {
        Value::Ref { type_id, key }
    }

    /// Checks writer `E`: its field names are the table's, in order, and a
    /// record of `ev` reads back as `expected` (field name, value) through
    /// the table.
    fn check<E: BuiltinEvent>(ev: E, context_ids: bool, expected: &[(&str, Value)]) {
        // A trailing `contextId` is the table's only when it is asked for.
        let mut declared = E::FIELDS.to_vec();
        if !context_ids && declared.last() == Some(&"contextId") {
            declared.pop();
        }
        assert_eq!(
            table_fields(E::TYPE, context_ids),
            declared,
            "writer of type {}: field list differs from the table's",
            E::TYPE.0
        );
        let got = read_back(&ev, &table(context_ids));
        let want: Vec<(String, Value)> = expected
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect();
        assert_eq!(got, want, "type {}", E::TYPE.0);
    }

    /// What a table field holds, as a writer's [`Kind`].
    fn kind_of(f: &crate::schema::FieldDesc) -> Option<Kind> {
        if f.array {
            return None;
        }
        if f.constant_pool {
            return Some(Kind::Key);
        }
        Some(match f.type_id {
            TypeId::LONG => Kind::Long,
            TypeId::INT => Kind::Int,
            TypeId::BOOLEAN => Kind::Boolean,
            TypeId::FLOAT => Kind::Float,
            TypeId::STRING => Kind::String,
            _ => return None,
        })
    }

    /// Every writer, against the table with context ids (the larger one):
    /// one writer per type, its field names in the table's order, each
    /// field written as the table declares it (pooled key, long, int,
    /// boolean, float or string), the first being `startTime`.
    #[test]
    fn every_writer_writes_the_table_fields_of_its_type() {
        let table = builtin_types_for(true);
        let mut seen = std::collections::HashSet::new();
        for (ty, names, kinds) in ALL {
            assert!(seen.insert(ty.0), "two writers of type {}", ty.0);
            let t = table
                .iter()
                .find(|t| t.id == *ty)
                .unwrap_or_else(|| panic!("type {} is in the table", ty.0));
            let table_names: Vec<&str> = t.fields.iter().map(|f| &*f.name).collect();
            assert_eq!(&table_names[..], *names, "{}: field names", t.name);
            let table_kinds: Vec<Option<Kind>> = t.fields.iter().map(kind_of).collect();
            let kinds: Vec<Option<Kind>> = kinds.iter().copied().map(Some).collect();
            assert_eq!(table_kinds, kinds, "{}: field kinds", t.name);
            assert_eq!(names.first(), Some(&"startTime"), "{}", t.name);
            assert_eq!(
                t.super_type.as_deref(),
                Some(crate::schema::EVENT_SUPER_TYPE)
            );
        }
    }

    const T: TypeId = TypeId::THREAD;
    const ST: TypeId = TypeId::STACK_TRACE;

    #[test]
    fn sample_writers_match_the_table_with_and_without_context_ids() {
        for context in [None, Some(77)] {
            let with = context.is_some();
            let mut expected = vec![
                ("startTime", long(11)),
                ("sampledThread", key(T, 12)),
                ("stackTrace", key(ST, 13)),
                ("state", key(TypeId::THREAD_STATE, 14)),
            ];
            expected.extend(context.map(|c| ("contextId", long(c))));
            let ev = ExecutionSample {
                start_time: 11,
                sampled_thread: 12,
                stack_trace: 13,
                state: 14,
                context_id: context,
            };
            check(ev, with, &expected);

            let mut expected = vec![
                ("startTime", long(21)),
                ("stackTrace", key(ST, 22)),
                ("eventThread", key(T, 23)),
                ("failed", Value::Boolean(true)),
                ("samplingPeriod", long(25)),
                ("biased", Value::Boolean(false)),
            ];
            expected.extend(context.map(|c| ("contextId", long(c))));
            let ev = CpuTimeSample {
                start_time: 21,
                stack_trace: 22,
                event_thread: 23,
                failed: true,
                sampling_period: 25,
                biased: false,
                context_id: context,
            };
            check(ev, with, &expected);
        }
    }

    #[test]
    fn every_writer_matches_the_table() {
        check(
            CpuTimeSamplesLost {
                start_time: 1,
                lost_samples: -2,
                event_thread: 3,
            },
            false,
            &[
                ("startTime", long(1)),
                ("lostSamples", Value::Int(-2)),
                ("eventThread", key(T, 3)),
            ],
        );
        check(
            ActiveSetting {
                start_time: 1,
                id: 101,
                name: "enabled",
                value: "true",
            },
            false,
            &[
                ("startTime", long(1)),
                ("id", long(101)),
                ("name", Value::String("enabled".into())),
                ("value", Value::String("true".into())),
            ],
        );
        for destination in [None, Some("/tmp/x.jfr")] {
            check(
                ActiveRecording {
                    start_time: 1,
                    id: 2,
                    name: "r",
                    destination,
                    disk: true,
                    max_age: 4,
                    flush_interval: 5,
                    max_size: 6,
                    recording_start: 7,
                    recording_duration: 8,
                },
                false,
                &[
                    ("startTime", long(1)),
                    ("id", long(2)),
                    ("name", Value::String("r".into())),
                    (
                        "destination",
                        destination.map_or(Value::Null, |d| Value::String(d.into())),
                    ),
                    ("disk", Value::Boolean(true)),
                    ("maxAge", long(4)),
                    ("flushInterval", long(5)),
                    ("maxSize", long(6)),
                    ("recordingStart", long(7)),
                    ("recordingDuration", long(8)),
                ],
            );
        }
        check(
            DataLoss {
                start_time: 1,
                amount: 2,
                total: 3,
            },
            false,
            &[
                ("startTime", long(1)),
                ("amount", long(2)),
                ("total", long(3)),
            ],
        );
        check(
            EventsLost {
                start_time: 1,
                cause: "BufferFull",
                events: 3,
                bytes: 4,
                total_events: 5,
            },
            false,
            &[
                ("startTime", long(1)),
                ("cause", Value::String("BufferFull".into())),
                ("events", long(3)),
                ("bytes", long(4)),
                ("totalEvents", long(5)),
            ],
        );
        check(
            ThreadStart {
                start_time: 1,
                event_thread: 2,
                stack_trace: 3,
                thread: 4,
                parent_thread: 5,
            },
            false,
            &[
                ("startTime", long(1)),
                ("eventThread", key(T, 2)),
                ("stackTrace", key(ST, 3)),
                ("thread", key(T, 4)),
                ("parentThread", key(T, 5)),
            ],
        );
        check(
            ThreadEnd {
                start_time: 1,
                event_thread: 2,
                thread: 3,
            },
            false,
            &[
                ("startTime", long(1)),
                ("eventThread", key(T, 2)),
                ("thread", key(T, 3)),
            ],
        );
        check(
            MethodTiming {
                start_time: 1,
                method: 2,
                invocations: 3,
                minimum: 4,
                average: 5,
                maximum: 6,
            },
            false,
            &[
                ("startTime", long(1)),
                ("method", key(TypeId::METHOD, 2)),
                ("invocations", long(3)),
                ("minimum", long(4)),
                ("average", long(5)),
                ("maximum", long(6)),
            ],
        );
        check(
            MethodTrace {
                start_time: 1,
                duration: 2,
                event_thread: 3,
                stack_trace: 4,
                method: 5,
            },
            false,
            &[
                ("startTime", long(1)),
                ("duration", long(2)),
                ("eventThread", key(T, 3)),
                ("stackTrace", key(ST, 4)),
                ("method", key(TypeId::METHOD, 5)),
            ],
        );
        check(
            ObjectAllocationSample {
                start_time: 1,
                event_thread: 2,
                stack_trace: 3,
                object_class: 4,
                weight: 5,
            },
            false,
            &[
                ("startTime", long(1)),
                ("eventThread", key(T, 2)),
                ("stackTrace", key(ST, 3)),
                ("objectClass", key(TypeId::CLASS, 4)),
                ("weight", long(5)),
            ],
        );
        check(
            ThreadAllocationStatistics {
                start_time: 1,
                allocated: 2,
                thread: 3,
            },
            false,
            &[
                ("startTime", long(1)),
                ("allocated", long(2)),
                ("thread", key(T, 3)),
            ],
        );
        check(
            OldObjectSample {
                start_time: 1,
                duration: 2,
                event_thread: 3,
                stack_trace: 4,
                allocation_time: 5,
                object_size: 6,
                object_age: 7,
                last_known_heap_usage: 8,
                object: 9,
                array_elements: i32::MIN,
                root: 11,
            },
            false,
            &[
                ("startTime", long(1)),
                ("duration", long(2)),
                ("eventThread", key(T, 3)),
                ("stackTrace", key(ST, 4)),
                ("allocationTime", long(5)),
                ("objectSize", long(6)),
                ("objectAge", long(7)),
                ("lastKnownHeapUsage", long(8)),
                ("object", key(TypeId::OLD_OBJECT, 9)),
                ("arrayElements", Value::Int(i32::MIN)),
                ("root", key(TypeId::OLD_OBJECT_GC_ROOT, 11)),
            ],
        );
        check(
            JavaMonitorEnter {
                start_time: 1,
                duration: 2,
                event_thread: 3,
                stack_trace: 4,
                monitor_class: 5,
                previous_owner: 6,
                address: 7,
            },
            false,
            &[
                ("startTime", long(1)),
                ("duration", long(2)),
                ("eventThread", key(T, 3)),
                ("stackTrace", key(ST, 4)),
                ("monitorClass", key(TypeId::CLASS, 5)),
                ("previousOwner", key(T, 6)),
                ("address", long(7)),
            ],
        );
        check(
            ThreadPark {
                start_time: 1,
                duration: 2,
                event_thread: 3,
                stack_trace: 4,
                parked_class: 5,
                timeout: i64::MIN,
                until: 7,
                address: 8,
            },
            false,
            &[
                ("startTime", long(1)),
                ("duration", long(2)),
                ("eventThread", key(T, 3)),
                ("stackTrace", key(ST, 4)),
                ("parkedClass", key(TypeId::CLASS, 5)),
                ("timeout", long(i64::MIN)),
                ("until", long(7)),
                ("address", long(8)),
            ],
        );
    }
}
