// Core dumps off for a process that holds merchant keys and card data: what the CLI, the service and
// the merchant tool do first thing in main.
internal import ApplePayCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Turns off what would write the process's memory (merchant keys, card data) to disk or hand it to
/// another process of the same user.
public enum CoreDumps {
    /// `RLIMIT_CORE` 0 (soft and hard: no core file, and a child cannot raise it back), and, with
    /// `forbidAttach`, `PR_SET_DUMPABLE` 0: no core even where the limit is ignored (a pipe in
    /// core_pattern), and no ptrace or /proc/PID/mem access by other processes of the same user.
    /// Not dumpable also makes /proc/self/fd and /proc/self/exe unreadable for a user other than
    /// root, so a process that reads them (the CLI finds its sibling tools through /proc/self/exe)
    /// passes false.
    public static func disable(forbidAttach: Bool) {
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
        if forbidAttach { ProcessDumpability.forbid() }
    }
}
