// PR_SET_DUMPABLE for the process, through CShims (prctl is variadic: Swift cannot call it).
internal import CShims

/// The process's dumpable flag (prctl(2)).
package enum ProcessDumpability {
    /// Not dumpable: no core dump whatever RLIMIT_CORE or core_pattern say, no ptrace attach by other
    /// processes of the same user. True when the call succeeded.
    @discardableResult
    package static func forbid() -> Bool { CShims_forbidDumping() == 0 }
}
