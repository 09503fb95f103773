// The files a run keeps beside its output OUT, named in one place for every check and clean-up.

/// OUT's side files: OUT.partial (the lines so far), OUT.claims (the replay journal), OUT.checkpoint
/// (where a resumed run starts), OUT.lock (held while the run goes) and OUT.runkey (the key that seals
/// the checkpoint, and a part's manifest).
enum RunFiles {
    static func partial(of out: String) -> String { out + ".partial" }
    static func claims(of out: String) -> String { out + ".claims" }
    static func checkpoint(of out: String) -> String { out + ".checkpoint" }
    static func lock(of out: String) -> String { out + ".lock" }
    static func runKey(of out: String) -> String { out + ".runkey" }

    /// OUT and each of its side files: what a run writes or removes, so what it must never read.
    static func written(by out: String) -> [String] {
        [out, partial(of: out), claims(of: out), checkpoint(of: out), lock(of: out), runKey(of: out)]
    }
}
