// Live-handle tables: a handle is a number drawn once from a process-wide 64-bit counter, never an
// address, so a freed handle stays refused even when the allocator hands its memory to a new object.
import Synchronization

/// The next handle of any type. One counter for all tables: a handle of one type is never live in
/// another table, so a result passed as a decryptor is refused too. 2⁶⁴ handles cannot run out.
private let nextHandle = Atomic<UInt64>(1)

final class HandleTable<Object: AnyObject & Sendable>: Sendable {
    // The table holds the strong reference; a lookup hands out its own, so a concurrent free cannot
    // pull an object from under a call that is using it (the object dies when the call is done).
    private let live = Mutex<[UInt64: Object]>([:])

    func open(_ object: Object) -> OpaquePointer {
        let handle = nextHandle.add(1, ordering: .relaxed).oldValue
        live.withLock { $0[handle] = object }
        return OpaquePointer(bitPattern: UInt(handle))!
    }

    func object(_ handle: OpaquePointer?) -> Object? {
        guard let handle else { return nil }
        let key = UInt64(UInt(bitPattern: UnsafeRawPointer(handle)))
        return live.withLock { $0[key] }
    }

    func close(_ handle: OpaquePointer?) -> Object? {
        guard let handle else { return nil }
        let key = UInt64(UInt(bitPattern: UnsafeRawPointer(handle)))
        return live.withLock { $0.removeValue(forKey: key) }
    }
}

let configs = HandleTable<ConfigBox>()
let decryptors = HandleTable<DecryptorBox>()
let results = HandleTable<ResultBox>()
let batchResults = HandleTable<BatchColumnsBox>()
