// A PKCS#11 module loaded with dlopen from an absolute path and initialised once per process, with
// the tokens it shows; and the failure of a PKCS#11 call, named after its CKR_ code.
internal import CShims
import Synchronization

/// A failed PKCS#11 call: the function and its return value (never a secret).
package struct PKCS11Failure: Error, Sendable, CustomStringConvertible {
    package let function: String
    package let code: UInt

    package init(_ function: String, _ code: UInt) {
        self.function = function
        self.code = code
    }

    /// `C_DeriveKey: CKR_SESSION_HANDLE_INVALID (0xb3)`.
    package var description: String { "\(function): \(Self.name(code))" }

    /// The session or the device went away: the session must be reopened (and logged in again).
    package var sessionLost: Bool { Self.sessionLostCodes.contains(code) }
    /// The PIN was refused or the token refuses any more attempts: never retry.
    package var pinRefused: Bool { [0xA0, 0xA1, 0xA2, 0xA4].contains(code) }
    /// The module no longer knows the session (closed, device or token removed, library reset): its
    /// handle must not be closed again, since the number may already name a new session.
    /// Device errors count too: after a reset the number may already name another lane's session.
    package var sessionGone: Bool { [0xB0, 0xB3, 0x30, 0x31, 0x32, 0xE0, 0xE1, 0x190].contains(code) }
    /// The private objects are hidden because no session of this process is logged in.
    package var notLoggedIn: Bool { code == 0x101 }

    private static let sessionLostCodes: Set<UInt> = [
        0x30, 0x31, 0x32, 0xB0, 0xB3, 0xE0, 0xE1, 0x101, 0x60, 0x82, 0x190,
    ]

    package static func name(_ code: UInt) -> String {
        let hex = "0x" + String(code, radix: 16)
        return names[code].map { "\($0) (\(hex))" } ?? "CKR \(hex)"
    }

    private static let names: [UInt: String] = [
        0x0: "CKR_OK", 0x3: "CKR_SLOT_ID_INVALID", 0x5: "CKR_GENERAL_ERROR", 0x6: "CKR_FUNCTION_FAILED",
        0x7: "CKR_ARGUMENTS_BAD",
        0x11: "CKR_ATTRIBUTE_SENSITIVE", 0x12: "CKR_ATTRIBUTE_TYPE_INVALID", 0x21: "CKR_DATA_LEN_RANGE",
        0x30: "CKR_DEVICE_ERROR", 0x31: "CKR_DEVICE_MEMORY", 0x32: "CKR_DEVICE_REMOVED",
        0x40: "CKR_ENCRYPTED_DATA_INVALID", 0x41: "CKR_ENCRYPTED_DATA_LEN_RANGE",
        0x60: "CKR_KEY_HANDLE_INVALID", 0x63: "CKR_KEY_TYPE_INCONSISTENT", 0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED",
        0x70: "CKR_MECHANISM_INVALID", 0x71: "CKR_MECHANISM_PARAM_INVALID", 0x82: "CKR_OBJECT_HANDLE_INVALID",
        0x90: "CKR_OPERATION_ACTIVE",
        0xA0: "CKR_PIN_INCORRECT", 0xA1: "CKR_PIN_INVALID", 0xA2: "CKR_PIN_LEN_RANGE", 0xA4: "CKR_PIN_LOCKED",
        0xB0: "CKR_SESSION_CLOSED", 0xB1: "CKR_SESSION_COUNT", 0xB3: "CKR_SESSION_HANDLE_INVALID",
        0xD0: "CKR_TEMPLATE_INCOMPLETE", 0xD1: "CKR_TEMPLATE_INCONSISTENT", 0xE0: "CKR_TOKEN_NOT_PRESENT",
        0xE1: "CKR_TOKEN_NOT_RECOGNIZED",
        0x100: "CKR_USER_ALREADY_LOGGED_IN", 0x101: "CKR_USER_NOT_LOGGED_IN", 0x102: "CKR_USER_PIN_NOT_INITIALIZED",
        0x130: "CKR_DOMAIN_PARAMS_INVALID", 0x150: "CKR_BUFFER_TOO_SMALL",
        0x190: "CKR_CRYPTOKI_NOT_INITIALIZED", 0x191: "CKR_CRYPTOKI_ALREADY_INITIALIZED",
    ]
}

/// A loaded module. Immutable after loading and shared by every key and session that uses it: the
/// module was initialised with OS locking, so its functions may be called from several threads.
package final class PKCS11Module: @unchecked Sendable {
    // Sendable: the function list is immutable and the module serialises its own state (CKF_OS_LOCKING_OK).
    let functions: UnsafePointer<CShims_CK_FUNCTION_LIST>
    /// The absolute path it was loaded from.
    package let path: String

    private init(functions: UnsafePointer<CShims_CK_FUNCTION_LIST>, path: String) {
        self.functions = functions
        self.path = path
    }

    /// One instance per path: C_Initialize is once per process, and reloads (SIGHUP) reuse the module.
    private static let loaded = Mutex<[String: PKCS11Module]>([:])

    /// Loads and initialises the module at `path` (already checked to be an absolute path to a regular
    /// file), or returns the one loaded before. The error text names the path and the cause.
    package static func load(path: String) throws(PKCS11LoadError) -> PKCS11Module {
        let result: Result<PKCS11Module, PKCS11LoadError> = loaded.withLock { modules in
            if let module = modules[path] { return .success(module) }
            var error: UnsafePointer<CChar>? = nil
            // The module's constructors and C_Initialize may redo OpenSSL's global set-up: not while a
            // key or certificate is decoded on another thread (OpenSSLGlobalState).
            let (list, rv) = OpenSSLGlobalState.changing { () -> (UnsafePointer<CShims_CK_FUNCTION_LIST>?, UInt) in
                guard let list = CShims_P11_load(path, &error) else { return (nil, 0) }
                return (list, CShims_P11_initialize(list))
            }
            guard let list else {
                return .failure(
                    PKCS11LoadError(
                        "cannot load the PKCS#11 module \(path): \(error.map { String(cString: $0) } ?? "unknown error")"
                    ))
            }
            guard rv == CShims_CKR_OK else {
                return .failure(
                    PKCS11LoadError(
                        "the PKCS#11 module \(path) does not initialise: \(PKCS11Failure("C_Initialize", rv))"))
            }
            let module = PKCS11Module(functions: list, path: path)
            modules[path] = module
            return .success(module)
        }
        return try result.get()
    }

    /// A token present in a slot: its slot, label and serial number (both with the padding removed).
    package struct Token: Sendable {
        package let slot: UInt
        package let label: String
        package let serial: String
        package let userPINLocked: Bool
    }

    /// The tokens present now.
    package func tokens() throws(PKCS11Failure) -> [Token] {
        var count: UInt = 0
        var rv = CShims_P11_slots(functions, nil, &count)
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_GetSlotList", rv) }
        var slots = [UInt](repeating: 0, count: Int(count))
        rv = slots.withUnsafeMutableBufferPointer { CShims_P11_slots(functions, $0.baseAddress, &count) }
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_GetSlotList", rv) }
        var tokens: [Token] = []
        for slot in slots.prefix(Int(count)) {
            var info = CK_TOKEN_INFO()
            let rv = CShims_P11_tokenInfo(functions, slot, &info)
            // A token removed between the two calls is simply not present.
            guard rv == CShims_CKR_OK else { continue }
            let label = withUnsafeBytes(of: info.label) { Self.padded($0) }
            let serial = withUnsafeBytes(of: info.serialNumber) { Self.padded($0) }
            tokens.append(Token(slot: slot, label: label, serial: serial, userPINLocked: info.flags & 0x40000 != 0))
        }
        return tokens
    }

    /// A serial session on `slot`.
    package func openSession(slot: UInt) throws(PKCS11Failure) -> PKCS11Session {
        var handle: UInt = 0
        let rv = CShims_P11_openSession(functions, slot, &handle)
        guard rv == CShims_CKR_OK else { throw PKCS11Failure("C_OpenSession", rv) }
        return PKCS11Session(module: self, slot: slot, handle: handle)
    }

    /// Closes every session of this process on `slot` (which logs it out): for tests of recovery.
    package func closeAllSessions(slot: UInt) {
        _ = CShims_P11_closeAllSessions(functions, slot)
    }

    /// How many of the session numbers 1..<`below` the module still knows (C_GetSessionInfo succeeds):
    /// for tests, with a module that never reuses a number (SoftHSM2), the sessions this process left open.
    package func openSessionCountForTesting(below: UInt) -> Int {
        var state: UInt = 0
        return (1..<max(below, 1)).filter { CShims_P11_sessionState(functions, $0, &state) == CShims_CKR_OK }.count
    }

    /// PKCS#11 pads token labels and serial numbers with spaces to their fixed width.
    private static func padded(_ bytes: UnsafeRawBufferPointer) -> String {
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == " " || text.last == "\0" { text.removeLast() }
        return text
    }
}

/// Why a module could not be loaded (a configuration error for the engine).
package struct PKCS11LoadError: Error, Sendable {
    package let message: String
    init(_ message: String) { self.message = message }
}
