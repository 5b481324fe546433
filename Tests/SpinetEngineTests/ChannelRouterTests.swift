import Testing
import SpinetEngine
import SpinetMIDI

/// The routing alone, without an engine or audio.
@Suite("ChannelRouter")
struct ChannelRouterTests {
    typealias D = ChannelRouter.Destination
    static func bit(_ u: Int) -> UInt64 { UInt64(1) << UInt64(u) }

    @Test func plainRoutingAndUnrouted() {
        var r = ChannelRouter(channels: 32)
        r.route(channel: 0, to: 2)
        #expect(r.unit(forChannel: 0) == 2 && r.unit(forChannel: 1) == nil)
        #expect(r.resolve(.noteOn(channel: 0, key: 60, velocity: 1), roomForLeaving: true) == D(units: Self.bit(2)))
        #expect(r.resolve(.noteOn(channel: 1, key: 60, velocity: 1), roomForLeaving: true) == D())
        // channel 16 + 0 is port 2's first channel
        r.route(channel: 16, to: 1)
        #expect(r.resolve(.controlChange(channel: 16, controller: 7, value: 1), roomForLeaving: true) == D(units: Self.bit(1)))
    }

    /// Mute drops note-ons only; solo mutes every other channel.
    @Test func muteAndSolo() {
        var r = ChannelRouter(channels: 16, muted: [3], solo: [])
        r.route(channel: 3, to: 0)
        #expect(r.isMuted(channel: 3) && !r.isMuted(channel: 4))
        #expect(r.resolve(.noteOn(channel: 3, key: 60, velocity: 100), roomForLeaving: true) == D())
        #expect(r.resolve(.noteOn(channel: 3, key: 60, velocity: 0), roomForLeaving: true) == D(units: 1))
        #expect(r.resolve(.noteOff(channel: 3, key: 60, velocity: 0), roomForLeaving: true) == D(units: 1))
        #expect(r.resolve(.programChange(channel: 3, program: 1), roomForLeaving: true) == D(units: 1))
        let s = ChannelRouter(channels: 16, solo: [1, 99])
        #expect((0..<16).filter { !s.isMuted(channel: $0) } == [1])
    }

    /// A bank-routed Program Change moves the channel, and the unit it
    /// leaves gets pedals up and All Notes Off (when there is room); any
    /// other bank moves it home.
    @Test func bankRoutes() {
        var r = ChannelRouter(channels: 16)
        r.route(channel: 0, to: 0)
        r.routeBank(msb: 126, to: 1)
        #expect(r.resolve(.controlChange(channel: 0, controller: 0, value: 126), roomForLeaving: true) == D(units: 1))
        #expect(r.resolve(.programChange(channel: 0, program: 3), roomForLeaving: true) == D(leaving: 1, units: 2))
        #expect(r.unit(forChannel: 0) == 1 && r.homeUnit(forChannel: 0) == 0)
        #expect(r.resolve(.programChange(channel: 0, program: 4), roomForLeaving: true) == D(units: 2))
        _ = r.resolve(.controlChange(channel: 0, controller: 0, value: 0), roomForLeaving: true)
        // no room for the leaving events: the move happens, without them
        #expect(r.resolve(.programChange(channel: 0, program: 0), roomForLeaving: false) == D(units: 1))
        #expect(r.unit(forChannel: 0) == 0)
    }

    /// A bank route of one channel comes before the route of that bank for
    /// every channel, and other channels keep the shared one.
    @Test func aChannelsOwnBankRoute() {
        var r = ChannelRouter(channels: 16)
        for c in 0..<3 { r.route(channel: c, to: 0) }
        r.routeBank(msb: 126, to: 1)
        r.routeBank(msb: 126, channel: 2, to: 3)
        for c: UInt8 in [1, 2] { _ = r.resolve(.controlChange(channel: c, controller: 0, value: 126), roomForLeaving: true) }
        #expect(r.resolve(.programChange(channel: 2, program: 8), roomForLeaving: true) == D(leaving: 1, units: Self.bit(3)))
        #expect(r.resolve(.programChange(channel: 1, program: 8), roomForLeaving: true) == D(leaving: 1, units: Self.bit(1)))
        #expect(r.resolve(.noteOn(channel: 2, key: 60, velocity: 90), roomForLeaving: true) == D(units: Self.bit(3)))
        // back to the font: home
        _ = r.resolve(.controlChange(channel: 2, controller: 0, value: 0), roomForLeaving: true)
        #expect(r.resolve(.programChange(channel: 2, program: 0), roomForLeaving: true) == D(leaving: Self.bit(3), units: 1))
        #expect(r.unit(forChannel: 0) == 0 && r.unit(forChannel: 1) == 1 && r.unit(forChannel: 2) == 0)
    }

    /// A split channel: each key's note-ons take turns, releasing the key's
    /// previous note where it played; note-offs follow; fixed keys stay
    /// home; other messages go to every turn unit.
    @Test func turnTaking() {
        var r = ChannelRouter(channels: 16)
        r.route(channel: 9, takingTurns: [1, 3], fixedKeys: [42])
        #expect(r.turnUnits(forChannel: 9) == Self.bit(1) | Self.bit(3))
        let on = MIDIMessage.noteOn(channel: 9, key: 51, velocity: 90)
        #expect(r.resolve(on, roomForLeaving: true) == D(units: Self.bit(1)))
        #expect(r.resolve(on, roomForLeaving: true) == D(release: Self.bit(1), units: Self.bit(3)))
        #expect(r.resolve(.noteOff(channel: 9, key: 51, velocity: 0), roomForLeaving: true) == D(units: Self.bit(3)))
        #expect(r.resolve(on, roomForLeaving: true) == D(release: Self.bit(3), units: Self.bit(1)))
        let hat = MIDIMessage.noteOn(channel: 9, key: 42, velocity: 90)
        #expect(r.resolve(hat, roomForLeaving: true) == D(units: Self.bit(1)))
        #expect(r.resolve(hat, roomForLeaving: true) == D(units: Self.bit(1)))
        #expect(r.resolve(.controlChange(channel: 9, controller: 7, value: 1), roomForLeaving: true) == D(units: Self.bit(1) | Self.bit(3)))
        // leaving home by a bank route: every turn unit lets go
        r.routeBank(msb: 127, to: 5)
        _ = r.resolve(.controlChange(channel: 9, controller: 0, value: 127), roomForLeaving: true)
        #expect(r.resolve(.programChange(channel: 9, program: 0), roomForLeaving: true)
                == D(leaving: Self.bit(1) | Self.bit(3), units: Self.bit(5)))
        // away from home, notes do not take turns
        #expect(r.resolve(on, roomForLeaving: true) == D(units: Self.bit(5)))
    }

    @Test func nextTurnCycles() {
        #expect(ChannelRouter.nextTurn(after: 1, in: 0b1010) == 3)
        #expect(ChannelRouter.nextTurn(after: 3, in: 0b1010) == 1)
    }
}
