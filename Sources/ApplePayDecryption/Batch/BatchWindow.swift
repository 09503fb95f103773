// One window of batch items: slices of a source's buffers, kept valid until its next fill, or bytes the window owns.

/// One window of input items. Slices point into buffers the source owns; they stay valid until
/// the source's next `fill`.
public struct BatchWindow {
    enum Item {
        case slice(UnsafeRawBufferPointer)
        case owned(Int)
        case unreadable(String)
    }

    var items: [Item] = []
    var locations: [BatchLocation] = []
    private(set) var owned: [[UInt8]] = []
    /// Bytes of the items in the window (borrowed and owned): what the window holds in memory.
    public private(set) var byteCount = 0
    /// Sources stop filling once the window holds this many bytes (however small `capacity` is
    /// not), so hostile inputs cannot make a window of 512 items large; one item is always accepted.
    public var byteBudget: Int

    /// The default byte budget of a window: 32 MiB.
    public static let defaultByteBudget = 32 << 20

    /// An empty window that accepts items until `byteBudget` bytes are held.
    public init(byteBudget: Int = BatchWindow.defaultByteBudget) {
        self.byteBudget = max(1, byteBudget)
    }

    /// Number of items in the window.
    public var count: Int { items.count }

    /// Whether a source may add another item: the window is empty or still under its byte budget.
    public var hasRoom: Bool { items.isEmpty || byteCount < byteBudget }

    /// A token that lives in a buffer the source keeps until its next `fill`.
    public mutating func append(borrowing bytes: UnsafeRawBufferPointer, at location: BatchLocation) {
        items.append(.slice(bytes))
        locations.append(location)
        byteCount += bytes.count
    }

    /// A token the window keeps (whole files, archive members).
    public mutating func append(owning bytes: [UInt8], at location: BatchLocation) {
        items.append(.owned(owned.count))
        owned.append(bytes)
        locations.append(location)
        byteCount += bytes.count
    }

    /// An item that could not be read; it becomes a `malformedToken` result.
    public mutating func appendUnreadable(_ reason: String, at location: BatchLocation) {
        items.append(.unreadable(reason))
        locations.append(location)
    }

    mutating func removeAll() {
        items.removeAll(keepingCapacity: true)
        locations.removeAll(keepingCapacity: true)
        owned.removeAll(keepingCapacity: true)
        byteCount = 0
    }

    func withBytes<R>(of index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        switch items[index] {
        case let .slice(bytes): return body(bytes)
        case let .owned(slot): return owned[slot].withUnsafeBytes(body)
        case .unreadable: return nil
        }
    }
}
