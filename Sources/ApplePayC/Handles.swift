// Live-handle tables: C only ever holds addresses these tables vouch for, so a NULL, freed or foreign
// handle is answered with an error code instead of a wild dereference.
import Synchronization

final class HandleTable<Object: AnyObject & Sendable>: Sendable {
    // The table holds the strong reference, so an address cannot be reused while its handle is live;
    // a lookup hands out its own reference, so a concurrent free cannot pull an object from under a call.
    private let live = Mutex<[UInt: Object]>([:])

    func open(_ object: Object) -> OpaquePointer {
        let address = UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque())
        live.withLock { $0[address] = object }
        return OpaquePointer(bitPattern: address)!
    }

    func object(_ handle: OpaquePointer?) -> Object? {
        guard let handle else { return nil }
        let address = UInt(bitPattern: UnsafeRawPointer(handle))
        return live.withLock { $0[address] }
    }

    func close(_ handle: OpaquePointer?) -> Object? {
        guard let handle else { return nil }
        let address = UInt(bitPattern: UnsafeRawPointer(handle))
        return live.withLock { $0.removeValue(forKey: address) }
    }
}

let configs = HandleTable<ConfigBox>()
let decryptors = HandleTable<DecryptorBox>()
let results = HandleTable<ResultBox>()
