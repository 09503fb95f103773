// Turns the batch command's INPUT arguments (JSONL files, directories of .json files, .zip
// archives, stdin) into one ordered token source, naming every origin for the result lines.
import ApplePayDecryption
import Foundation
import ZIPFoundation

/// Names of origins (files, archive members, stdin), numbered as results refer to them.
final class OriginNames {
    private(set) var names: [String] = []
    func add(_ name: String) -> Int {
        names.append(name)
        return names.count - 1
    }
    func label(_ location: BatchLocation) -> String { "\(names[location.origin]):\(location.line)" }
}

enum BatchInputs {
    /// Builds the source for all inputs, in order. Fails (exit 2) only for inputs that do not exist.
    static func source(for inputs: [String], names: OriginNames) throws -> ChainedTokenSource {
        var sources: [any BatchTokenSource] = []
        for input in inputs {
            if input == "-" {
                sources.append(JSONLinesSource(fileDescriptor: 0, origin: names.add("stdin"), closeWhenDone: false))
                continue
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory) else {
                throw CLIError("input \(input) does not exist")
            }
            if isDirectory.boolValue {
                sources.append(DirectorySource(path: input, names: names))
            } else if input.lowercased().hasSuffix(".zip") {
                sources.append(ZipSource(path: input, names: names))
            } else {
                do {
                    sources.append(try JSONLinesSource(path: input, origin: names.add(input)))
                } catch let error as ConfigurationError {
                    throw CLIError(error.message)
                }
            }
        }
        return ChainedTokenSource(sources)
    }
}

/// The `.json` files of a directory (not recursive), in name order, one token per file.
struct DirectorySource: BatchTokenSource {
    private var files: [String] = []
    private var next = 0
    private let names: OriginNames
    private let directory: String

    init(path: String, names: OriginNames) {
        self.directory = path
        self.names = names
        files = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.lowercased().hasSuffix(".json") }.sorted()
    }

    mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while window.count < capacity, next < files.count {
            let path = (directory as NSString).appendingPathComponent(files[next])
            let location = BatchLocation(origin: names.add(path), line: 1)
            if let data = FileManager.default.contents(atPath: path) {
                window.append(owning: [UInt8](data), at: location)
            } else {
                window.appendUnreadable("cannot read \(path)", at: location)
            }
            next += 1
        }
        return window.count > 0
    }
}

/// The `.json` (one token each) and `.jsonl` (one token per line) members of a zip archive, in
/// archive order. A member that fails to extract (bad CRC, truncated) is one unreadable item.
struct ZipSource: BatchTokenSource {
    private let path: String
    private let names: OriginNames
    private var archive: Archive?
    private var entries: [Entry] = []
    private var next = 0
    private var openError: String?
    private var pendingLines: (origin: Int, lines: [[UInt8]], next: Int)?

    init(path: String, names: OriginNames) {
        self.path = path
        self.names = names
        do {
            let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
            self.archive = archive
            entries = archive.filter { $0.type == .file && ($0.path.lowercased().hasSuffix(".json") || $0.path.lowercased().hasSuffix(".jsonl")) }
        } catch {
            openError = "cannot open zip archive: \(error)"
        }
    }

    mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        if let openError {
            // The whole archive is one unreadable item, reported once.
            window.appendUnreadable(openError, at: BatchLocation(origin: names.add(path), line: 1))
            self.openError = nil
            archive = nil
            return true
        }
        guard let archive else { return false }
        while window.count < capacity {
            if var pending = pendingLines {
                while window.count < capacity, pending.next < pending.lines.count {
                    pending.next += 1
                    let line = pending.lines[pending.next - 1]
                    if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                    window.append(owning: line, at: BatchLocation(origin: pending.origin, line: pending.next))
                }
                pendingLines = pending.next < pending.lines.count ? pending : nil
                continue
            }
            guard next < entries.count else { break }
            let entry = entries[next]
            next += 1
            let origin = names.add("\(path)!\(entry.path)")
            var bytes: [UInt8] = []
            do {
                // The consumer form of extract computes the CRC but leaves the comparison to us.
                let crc = try archive.extract(entry, skipCRC32: false) { chunk in bytes.append(contentsOf: chunk) }
                guard crc == entry.checksum else {
                    window.appendUnreadable("corrupt zip member \(entry.path): CRC-32 mismatch", at: BatchLocation(origin: origin, line: 1))
                    continue
                }
            } catch {
                window.appendUnreadable("corrupt zip member \(entry.path): \(error)", at: BatchLocation(origin: origin, line: 1))
                continue
            }
            if entry.path.lowercased().hasSuffix(".jsonl") {
                pendingLines = (origin, bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init), 0)
            } else {
                window.append(owning: bytes, at: BatchLocation(origin: origin, line: 1))
            }
        }
        return window.count > 0
    }
}
