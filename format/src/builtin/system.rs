//! The built-in types that say what the process and the machine were doing
//! (type ids 140 ..= 169): per-chunk descriptions of the OS, CPU, memory,
//! container and loaded libraries, periodic load and usage figures, the
//! shutdown, and panics in the JDK's error-throw layout.
//!
//! Names, field names, field order, types and annotations are JDK 25's
//! (`jfr metadata` on a JDK recording), because `jfr view` reports
//! (`system-information`, `cpu-load`, `thread-cpu-load`,
//! `container-configuration`, `exception-by-site`, ...) are queries over
//! them. The one type of our own, `flightrec.ProcessInformation`, has no JDK
//! counterpart with the same meaning.

use std::borrow::Cow;

use super::{BYTES, ENABLED, ENABLED_ON, WITH_STACK, category, event, event_thread, label};
use super::{stack_trace, start_time};
use crate::schema::{Annotation as A, DataAmountUnit, FieldDesc, SettingDesc, TimespanUnit};
use crate::types::TypeId as T;

const OPERATING_SYSTEM: &[&str] = &["Operating System"];
const MEMORY: &[&str] = &["Operating System", "Memory"];
const PROCESSOR: &[&str] = &["Operating System", "Processor"];
const NETWORK: &[&str] = &["Operating System", "Network"];
const FLIGHTREC_PROCESS: &[&str] = &["Operating System", "Process"];
const THREADS: &[&str] = &["Java Application", "Statistics"];
const RUNTIME_TYPES: &[&str] = &["Java Application"];
const JVM: &[&str] = &["Java Virtual Machine"];
const FLIGHT_RECORDER: &[&str] = &["Flight Recorder"];

const fn period(default: &'static str) -> SettingDesc {
    SettingDesc::new("period", T::SETTING_PERIOD, default)
}

/// `period` defaulting to `beginChunk`.
pub(super) const BEGIN_CHUNK: SettingDesc = period("beginChunk");
const EVERY_CHUNK: SettingDesc = period("everyChunk");
pub(super) const ONE_SECOND: SettingDesc = period("1 s");
const TEN_SECONDS: SettingDesc = period("10 s");
const FIVE_SECONDS: SettingDesc = period("5 s");
const THIRTY_SECONDS: SettingDesc = period("30 s");

fn f(name: &'static str, ty: T, annotations: Vec<A>) -> FieldDesc {
    FieldDesc::annotated(name, ty, annotations)
}

fn long(name: &'static str, l: &'static str) -> FieldDesc {
    f(name, T::LONG, vec![label(l)])
}

fn bytes(name: &'static str, l: &'static str) -> FieldDesc {
    f(name, T::LONG, vec![label(l), BYTES])
}

fn ubytes(name: &'static str, l: &'static str) -> FieldDesc {
    f(name, T::LONG, vec![label(l), A::Unsigned, BYTES])
}

fn nanos(name: &'static str, l: &'static str) -> FieldDesc {
    f(
        name,
        T::LONG,
        vec![label(l), A::Timespan(TimespanUnit::Nanoseconds)],
    )
}

fn micros(name: &'static str, l: &'static str) -> FieldDesc {
    f(
        name,
        T::LONG,
        vec![label(l), A::Timespan(TimespanUnit::Microseconds)],
    )
}

fn string(name: &'static str, l: &'static str) -> FieldDesc {
    f(name, T::STRING, vec![label(l)])
}

fn percent(name: &'static str, l: &'static str) -> FieldDesc {
    f(name, T::FLOAT, vec![label(l), A::Percentage])
}

fn address(name: &'static str, l: &'static str) -> FieldDesc {
    f(name, T::LONG, vec![label(l), A::Unsigned, A::MemoryAddress])
}

fn bit_rate(name: &'static str, l: &'static str) -> FieldDesc {
    f(
        name,
        T::LONG,
        vec![label(l), A::DataAmount(DataAmountUnit::Bits), A::Frequency],
    )
}

fn hz(name: &'static str, l: &'static str) -> FieldDesc {
    f(name, T::LONG, vec![label(l), A::Frequency])
}

fn periodic(
    id: T,
    name: &'static str,
    l: &'static str,
    cat: &[&'static str],
    fields: Vec<FieldDesc>,
    period: SettingDesc,
) -> crate::schema::TypeDesc {
    let mut all = vec![start_time()];
    all.extend(fields);
    event(
        id,
        name,
        all,
        vec![label(l), category(cat)],
        vec![ENABLED_ON, period],
    )
}

/// The types of this module, in id order.
pub(super) fn types() -> Vec<crate::schema::TypeDesc> {
    vec![
        periodic(
            T::PHYSICAL_MEMORY,
            "jdk.PhysicalMemory",
            "Physical Memory",
            MEMORY,
            vec![
                ubytes("totalSize", "Total Size"),
                ubytes("usedSize", "Used Size"),
            ],
            EVERY_CHUNK,
        ),
        periodic(
            T::VIRTUALIZATION_INFORMATION,
            "jdk.VirtualizationInformation",
            "Virtualization Information",
            OPERATING_SYSTEM,
            vec![string("name", "Name")],
            BEGIN_CHUNK,
        ),
        periodic(
            T::CONTAINER_CONFIGURATION,
            "jdk.ContainerConfiguration",
            "Container Configuration",
            OPERATING_SYSTEM,
            vec![
                string("containerType", "Container Type"),
                micros("cpuSlicePeriod", "CPU Slice Period"),
                micros("cpuQuota", "CPU Quota"),
                long("cpuShares", "CPU Shares"),
                long("effectiveCpuCount", "Effective CPU Count"),
                bytes("memorySoftLimit", "Memory Soft Limit"),
                bytes("memoryLimit", "Memory Limit"),
                bytes("swapMemoryLimit", "Memory and Swap Limit"),
                bytes("hostTotalMemory", "Container Host Total Memory"),
                bytes("hostTotalSwapMemory", "Container Host Total Swap Memory"),
            ],
            BEGIN_CHUNK,
        ),
        periodic(
            T::NATIVE_LIBRARY,
            "jdk.NativeLibrary",
            "Native Library",
            JVM,
            vec![
                string("name", "Name"),
                address("baseAddress", "Base Address"),
                address("topAddress", "Top Address"),
            ],
            EVERY_CHUNK,
        ),
        periodic(
            T::INITIAL_ENVIRONMENT_VARIABLE,
            "jdk.InitialEnvironmentVariable",
            "Initial Environment Variable",
            OPERATING_SYSTEM,
            vec![string("key", "Key"), string("value", "Value")],
            BEGIN_CHUNK,
        ),
        periodic(
            T::PROCESS_INFORMATION,
            "flightrec.ProcessInformation",
            "Process Information",
            FLIGHTREC_PROCESS,
            vec![
                long("pid", "Process Identifier"),
                string("executable", "Executable"),
                string("commandLine", "Command Line"),
            ],
            BEGIN_CHUNK,
        ),
        periodic(
            T::CPU_LOAD,
            "jdk.CPULoad",
            "CPU Load",
            PROCESSOR,
            vec![
                percent("jvmUser", "JVM User"),
                percent("jvmSystem", "JVM System"),
                percent("machineTotal", "Machine Total"),
            ],
            ONE_SECOND,
        ),
        periodic(
            T::THREAD_CPU_LOAD,
            "jdk.ThreadCPULoad",
            "Thread CPU Load",
            PROCESSOR,
            vec![
                event_thread(),
                percent("user", "User Mode CPU Load"),
                percent("system", "System Mode CPU Load"),
            ],
            TEN_SECONDS,
        ),
        periodic(
            T::RESIDENT_SET_SIZE,
            "jdk.ResidentSetSize",
            "Resident Set Size",
            MEMORY,
            vec![
                ubytes("size", "Resident Set Size"),
                ubytes("peak", "Resident Set Size Peak Value"),
            ],
            ONE_SECOND,
        ),
        periodic(
            T::CONTAINER_CPU_USAGE,
            "jdk.ContainerCPUUsage",
            "CPU Usage",
            OPERATING_SYSTEM,
            vec![
                nanos("cpuTime", "CPU Time"),
                nanos("cpuUserTime", "CPU User Time"),
                nanos("cpuSystemTime", "CPU System Time"),
            ],
            THIRTY_SECONDS,
        ),
        periodic(
            T::CONTAINER_MEMORY_USAGE,
            "jdk.ContainerMemoryUsage",
            "Memory Usage",
            OPERATING_SYSTEM,
            vec![
                long("memoryFailCount", "Memory Fail Count"),
                bytes("memoryUsage", "Memory Usage"),
                bytes("swapMemoryUsage", "Memory and Swap Usage"),
            ],
            THIRTY_SECONDS,
        ),
        periodic(
            T::CONTAINER_CPU_THROTTLING,
            "jdk.ContainerCPUThrottling",
            "CPU Throttling",
            OPERATING_SYSTEM,
            vec![
                long("cpuElapsedSlices", "CPU Elapsed Slices"),
                long("cpuThrottledSlices", "CPU Throttled Slices"),
                nanos("cpuThrottledTime", "CPU Throttled Time"),
            ],
            THIRTY_SECONDS,
        ),
        periodic(
            T::CONTAINER_IO_USAGE,
            "jdk.ContainerIOUsage",
            "Container IO Usage",
            OPERATING_SYSTEM,
            vec![
                long("serviceRequests", "Block IO Request Count"),
                bytes("dataTransferred", "Block IO Transfer"),
            ],
            THIRTY_SECONDS,
        ),
        periodic(
            T::NETWORK_UTILIZATION,
            "jdk.NetworkUtilization",
            "Network Utilization",
            NETWORK,
            vec![
                string("networkInterface", "Network Interface"),
                bit_rate("readRate", "Read Rate"),
                bit_rate("writeRate", "Write Rate"),
            ],
            FIVE_SECONDS,
        ),
        periodic(
            T::CPU_TIME_STAMP_COUNTER,
            "jdk.CPUTimeStampCounter",
            "CPU Time Stamp Counter",
            PROCESSOR,
            vec![
                f("fastTimeEnabled", T::BOOLEAN, vec![label("Fast Time")]),
                f(
                    "fastTimeAutoEnabled",
                    T::BOOLEAN,
                    vec![label("Trusted Platform")],
                ),
                hz("osFrequency", "OS Frequency"),
                hz("fastTimeFrequency", "Fast Time Frequency"),
            ],
            BEGIN_CHUNK,
        ),
        periodic(
            T::JAVA_THREAD_STATISTICS,
            "jdk.JavaThreadStatistics",
            "Java Thread Statistics",
            THREADS,
            vec![
                long("activeCount", "Active Threads"),
                long("daemonCount", "Daemon Threads"),
                long("accumulatedCount", "Accumulated Threads"),
                long("peakCount", "Peak Threads"),
            ],
            ONE_SECOND,
        ),
        event(
            T::SHUTDOWN,
            "jdk.Shutdown",
            vec![
                start_time(),
                event_thread(),
                stack_trace(),
                string("reason", "Reason"),
            ],
            vec![label("JVM Shutdown"), category(FLIGHT_RECORDER)],
            vec![ENABLED_ON, WITH_STACK],
        ),
        throw_type(T::JAVA_ERROR_THROW, "jdk.JavaErrorThrow", "Java Error"),
        throw_type(
            T::JAVA_EXCEPTION_THROW,
            "jdk.JavaExceptionThrow",
            "Java Exception",
        ),
        periodic(
            T::EXCEPTION_STATISTICS,
            "jdk.ExceptionStatistics",
            "Exception Statistics",
            RUNTIME_TYPES,
            vec![long("throwables", "Exceptions Created")],
            ONE_SECOND,
        ),
    ]
}

fn throw_type(id: T, name: &'static str, l: &'static str) -> crate::schema::TypeDesc {
    event(
        id,
        name,
        vec![
            start_time(),
            event_thread(),
            stack_trace(),
            string("message", "Message"),
            FieldDesc::annotated("thrownClass", T::CLASS, vec![label("Class")]).pooled_field(),
        ],
        vec![A::Label(Cow::Borrowed(l)), category(&["Java Application"])],
        vec![ENABLED, WITH_STACK],
    )
}
