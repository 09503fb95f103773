// Intel's crypto_mb loaded at run time (dlopen, never linked): found, checked for this CPU, and
// self-tested against OpenSSL once, before any token's arithmetic goes through it.
internal import CShims
#if canImport(Glibc)
    import Glibc
#endif

/// The loaded library's entry points. Only the functions this package calls are declared, with the
/// C signatures of crypto_mb's public headers (`crypto_mb/cpu_features.h`, `crypto_mb/ec_nistp256.h`).
package final class CryptoMBLibrary: @unchecked Sendable {
    // Sendable: the handle and the function pointers never change after loading; crypto_mb's
    // functions keep no state between calls.

    /// `int mbx_is_crypto_mb_applicable(int64u cpu_features)`; 0 asks crypto_mb to detect the CPU.
    typealias Applicable = @convention(c) (UInt64) -> Int32
    /// `mbx_status mbx_nistp256_ecdh_mb8(int8u* pa_shared_key[8], const int64u* const pa_skey[8],
    ///  const int64u* const pa_pubx[8], const int64u* const pa_puby[8], const int64u* const pa_pubz[8],
    ///  int8u* pBuffer)`: keys and coordinates as four little-endian 64-bit limbs, Z = 1 for an affine
    /// point; the 32-byte shared secrets big-endian; four status bits per lane.
    typealias ECDH =
        @convention(c) (
            UnsafePointer<UnsafeMutablePointer<UInt8>?>, UnsafePointer<UnsafePointer<UInt64>?>,
            UnsafePointer<UnsafePointer<UInt64>?>,
            UnsafePointer<UnsafePointer<UInt64>?>, UnsafePointer<UnsafePointer<UInt64>?>?, UnsafeMutablePointer<UInt8>?
        ) -> UInt32

    /// `mbx_status mbx_nistp256_ecdsa_verify_mb8(const int8u* const pa_sign_r[8], const int8u* const
    ///  pa_sign_s[8], const int8u* const pa_msg[8], const int64u* const pa_pubx[8], const int64u* const
    ///  pa_puby[8], const int64u* const pa_pubz[8], int8u* pBuffer)`: r, s and the digest as 32
    /// big-endian bytes (each < n, or the lane is refused), the key as limbs; four status bits per lane.
    typealias Verify =
        @convention(c) (
            UnsafePointer<UnsafePointer<UInt8>?>, UnsafePointer<UnsafePointer<UInt8>?>,
            UnsafePointer<UnsafePointer<UInt8>?>,
            UnsafePointer<UnsafePointer<UInt64>?>, UnsafePointer<UnsafePointer<UInt64>?>,
            UnsafePointer<UnsafePointer<UInt64>?>?,
            UnsafeMutablePointer<UInt8>?
        ) -> UInt32

    /// `mbx_status mbx_nistp256_ecpublic_key_mb8(int64u* pa_pubx[8], int64u* pa_puby[8], int64u* pa_pubz[8],
    ///  const int64u* const pa_skey[8], int8u* pBuffer)`: k·G for eight scalars k (four little-endian
    /// limbs each, 0 < k < n), written as limbs; in Jacobian coordinates (X/Z², Y/Z³) when `pa_pubz` is
    /// given, which saves a field inversion per lane (3.2 µs a lane against 4.1 µs for affine output,
    /// measured in C on the development machine); four status bits per lane.
    package typealias FixedBase =
        @convention(c) (
            UnsafePointer<UnsafeMutablePointer<UInt64>?>, UnsafePointer<UnsafeMutablePointer<UInt64>?>,
            UnsafePointer<UnsafeMutablePointer<UInt64>?>?, UnsafePointer<UnsafePointer<UInt64>?>,
            UnsafeMutablePointer<UInt8>?
        ) -> UInt32

    /// Where the library was loaded from.
    package let path: String
    let ecdh: ECDH
    let verify: Verify?
    package let fixedBase: FixedBase?
    private let handle: UnsafeMutableRawPointer

    private init(path: String, handle: UnsafeMutableRawPointer, ecdh: ECDH, verify: Verify?, fixedBase: FixedBase?) {
        self.path = path
        self.handle = handle
        self.ecdh = ecdh
        self.verify = verify
        self.fixedBase = fixedBase
    }

    /// The same library with its fixed-base call replaced by `fixedBase`: tests of what the lanes do
    /// with a library that answers wrongly for some scalars, which a known-answer self-test may miss.
    package func replacingFixedBase(with fixedBase: @escaping FixedBase) -> CryptoMBLibrary {
        CryptoMBLibrary(path: path, handle: handle, ecdh: ecdh, verify: verify, fixedBase: fixedBase)
    }

    /// The soname the loader's path is searched for when `APPLEPAY_CRYPTO_MB` is not set.
    package static let soname = "libcrypto_mb.so.13"
    /// The Intel runtime libraries `pip install intel-cmplr-lib-rt` puts beside crypto_mb, in
    /// dependency order (libintlc first: the others need it). Loaded by full path from crypto_mb's own
    /// folder first, so that neither LD_LIBRARY_PATH nor ldconfig is needed: the loader then finds
    /// crypto_mb's dependencies already loaded under their sonames.
    static let runtimeLibraries = ["libintlc.so.5", "libimf.so", "libsvml.so", "libirng.so"]

    /// What loading found: the library, or why there is none.
    package enum Outcome: Sendable {
        case loaded(CryptoMBLibrary)
        case unavailable(String)
    }

    /// Loads crypto_mb from `path` (a file path), or from the loader's path when nil, and checks the
    /// CPU. Never crashes the process: every failure is a reason.
    ///
    /// Nothing is loaded from a path that `TrustedLibraryPath` refuses (APPLEPAY_CRYPTO_MB must be
    /// absolute; the library, its runtime beside it and their folders only root's or this user's, and
    /// crypto_mb's own folder writable by nobody else, sticky or not: a name added there would load),
    /// and without APPLEPAY_CRYPTO_MB nothing is loaded while LD_LIBRARY_PATH has an empty or relative
    /// entry (the loader would search the working directory). Every library in crypto_mb's folder that
    /// it needs is loaded too: the folder must hold only libraries trusted as much as crypto_mb.
    package static func load(path: String?) -> Outcome {
        let libraryPath = ProcessEnvironment.value("LD_LIBRARY_PATH")
        var target = soname
        if let path {
            guard access(path, F_OK) == 0 else {
                return .unavailable("library missing: APPLEPAY_CRYPTO_MB \(path): \(String(cString: strerror(errno)))")
            }
            switch TrustedLibraryPath.resolve(path, what: "APPLEPAY_CRYPTO_MB", privateFolder: true) {
            case let .failure(refusal): return .unavailable("not loaded: \(refusal.message)")
            case let .success(resolved): target = resolved
            }
        } else if let libraryPath,
            libraryPath.split(separator: ":", omittingEmptySubsequences: false).contains(where: {
                !$0.hasPrefix("/")
            })
        {
            return .unavailable(
                "not loaded: LD_LIBRARY_PATH has an empty or relative entry, so the loader would look for \(soname) in "
                    + "the working directory; set APPLEPAY_CRYPTO_MB to its absolute path")
        } else if let libraryPath {
            // Found on LD_LIBRARY_PATH by this process itself, so that the folder it is in is checked.
            for folder in libraryPath.split(separator: ":") where access(folder + "/" + soname, F_OK) == 0 {
                switch TrustedLibraryPath.resolve(folder + "/" + soname, what: soname, privateFolder: true) {
                case let .failure(refusal): return .unavailable("not loaded: \(refusal.message)")
                case let .success(resolved): target = resolved
                }
                break
            }
        }
        if target != soname, let slash = target.lastIndex(of: "/") {
            let folder = String(target[..<slash])
            for name in runtimeLibraries where access(folder + "/" + name, F_OK) == 0 {
                switch TrustedLibraryPath.resolve(folder + "/" + name, what: name, privateFolder: true) {
                case let .failure(refusal): return .unavailable("not loaded: \(refusal.message)")
                // Kept loaded for the life of the process, as crypto_mb itself.
                case let .success(resolved): _ = dlopen(resolved, RTLD_NOW | RTLD_GLOBAL)
                }
            }
        }
        guard let handle = dlopen(target, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
            return .unavailable(
                path == nil
                    ? "library missing: \(soname) is not on the loader's path and APPLEPAY_CRYPTO_MB is not set (\(why))"
                    : "library missing or unloadable: \(why)")
        }
        guard let applicableSymbol = dlsym(handle, "mbx_is_crypto_mb_applicable"),
            let ecdhSymbol = dlsym(handle, "mbx_nistp256_ecdh_mb8")
        else {
            dlclose(handle)
            return .unavailable(
                "\(target) lacks mbx_is_crypto_mb_applicable or mbx_nistp256_ecdh_mb8 (not crypto_mb 1.x?)")
        }
        let applicable = unsafeBitCast(applicableSymbol, to: Applicable.self)
        // Asked before any arithmetic: crypto_mb's kernels would raise SIGILL on a CPU without them.
        guard applicable(0) != 0 else {
            dlclose(handle)
            return .unavailable("CPU without AVX-512 IFMA (mbx_is_crypto_mb_applicable says no for this processor)")
        }
        let verify = dlsym(handle, "mbx_nistp256_ecdsa_verify_mb8").map { unsafeBitCast($0, to: Verify.self) }
        let fixedBase = dlsym(handle, "mbx_nistp256_ecpublic_key_mb8").map { unsafeBitCast($0, to: FixedBase.self) }
        return .loaded(
            CryptoMBLibrary(
                path: target, handle: handle, ecdh: unsafeBitCast(ecdhSymbol, to: ECDH.self), verify: verify,
                fixedBase: fixedBase))
    }
}

/// The process-wide verdict on crypto_mb: decided once, at first use, then fixed.
package enum CryptoMB {
    /// The library and its self-test's verdict, or why the OpenSSL path runs.
    package enum Status: Sendable {
        case ready(CryptoMBLibrary)
        case unavailable(String)

        package var library: CryptoMBLibrary? {
            if case let .ready(library) = self { return library }
            return nil
        }
    }

    /// `APPLEPAY_CRYPTO_MB` (the path of libcrypto_mb.so.13) or the loader's path; then the CPU
    /// check and the known-answer self-tests. `APPLEPAY_CRYPTO_MB_TESTING_ONLY_FAIL_SELF_TEST=1`
    /// corrupts one expected ECDH answer, `=verify` one expected verification verdict, `=fixedbase` one
    /// expected fixed-base point, so that tests can watch a failing self-test fall back.
    package static let shared: Status = {
        let environment = ProcessEnvironment.self
        let path = environment.value("APPLEPAY_CRYPTO_MB").flatMap { $0.isEmpty ? nil : $0 }
        let fault = environment.value("APPLEPAY_CRYPTO_MB_TESTING_ONLY_FAIL_SELF_TEST")
        return probe(
            path: path, failSelfTest: fault == "1", failVerificationSelfTest: fault == "verify",
            failFixedBaseSelfTest: fault == "fixedbase")
    }()

    /// Loads and self-tests without caching (tests; `shared` is the one the engine uses). The ECDH
    /// self-test, then, for each of `mbx_nistp256_ecdsa_verify_mb8` and `mbx_nistp256_ecpublic_key_mb8`
    /// the library has, its own: a library that gets any of them wrong is not used at all.
    package static func probe(
        path: String?, failSelfTest: Bool = false, failVerificationSelfTest: Bool = false,
        failFixedBaseSelfTest: Bool = false
    ) -> Status {
        switch CryptoMBLibrary.load(path: path) {
        case let .unavailable(reason):
            return .unavailable(reason)
        case let .loaded(library):
            if let failure = P256MultiBufferAgreement.selfTest(library, corruptExpectedLane: failSelfTest ? 5 : nil) {
                return .unavailable("self-test failed: \(failure)")
            }
            // The batch lanes no longer call mbx_nistp256_ecdsa_verify_mb8 (the benchmark's floor does),
            // but a library that gets any P-256 answer wrong is not trusted with the others.
            if library.verify != nil,
                let failure = P256MultiBufferVerification.selfTest(
                    library, corruptExpectedLane: failVerificationSelfTest ? 3 : nil)
            {
                return .unavailable("self-test failed: \(failure)")
            }
            if library.fixedBase != nil,
                let failure = P256MultiBufferTableVerification.selfTest(
                    library, corruptExpectedLane: failFixedBaseSelfTest ? 6 : nil)
            {
                return .unavailable("self-test failed: \(failure)")
            }
            return .ready(library)
        }
    }
}

/// getenv without Foundation (this floor imports only libc, OpenSSL and libsodium).
enum ProcessEnvironment {
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
