-- Creates Spinet's Ardour test session: a MIDI track whose instrument is
-- Spinet's LV2, the test player in front of it, the parameters set.
-- Arguments through the environment: SESSION_DIR, SESSION_NAME.
local dir, name = os.getenv ("SESSION_DIR"), os.getenv ("SESSION_NAME")
local uri = "https://spinet.dev/plugins/spinet"
AudioEngine:set_backend ("None (Dummy)", "", "")
local s = create_session (dir, name, 48000)
assert (s, "no session")
for p in ARDOUR.LuaAPI.list_plugins ():iter () do
	if p.unique_id == uri then print ("ardour-test: listed", p.name, "creator", p.creator, "category", p.category) end
end
local tl = s:new_midi_track (ARDOUR.ChanCount (ARDOUR.DataType ("midi"), 1), ARDOUR.ChanCount (ARDOUR.DataType ("audio"), 2),
	true, ARDOUR.PluginInfo (), nil, nil, 1, "Synth", ARDOUR.PresentationInfo.max_order, ARDOUR.TrackMode.Normal, true, false)
local track = tl:front ()
-- only the player's events: the track's own MIDI input (the dummy
-- backend's ports) off
track:to_midi_track ():set_input_active (false)
local spinet = ARDOUR.LuaAPI.new_plugin (s, uri, ARDOUR.PluginType.LV2, "")
assert (not spinet:isnil (), "Spinet's LV2 not found")
assert (track:add_processor_by_index (spinet, 0, nil, true) == 0, "Spinet not added")
local player = ARDOUR.LuaAPI.new_luaproc (s, "Spinet Test Player")
assert (not player:isnil (), "the test player not found")
assert (track:add_processor_by_index (player, 0, nil, true) == 0, "the player not added")
-- gain -6 dB, reverb return 0.25 (the control ports 4 and 5: their
-- parameter indices are 0 and 1)
ARDOUR.LuaAPI.set_processor_param (spinet, 0, -6)
ARDOUR.LuaAPI.set_processor_param (spinet, 1, 0.25)
local order = {}
local i = 0
while true do
	local p = track:nth_plugin (i)
	if p:isnil () then break end
	order[#order + 1] = p:display_name ()
	i = i + 1
end
print ("ardour-test: processors", table.concat (order, ", "))
-- Ardour hands control values to a plugin in its process cycle: let one run
ARDOUR.LuaAPI.wait_for_process_callback (2, 2000)
for _, f in ipairs ({ "signal_latency", "playback_latency", "output_latency" }) do
	local ok, v = pcall (function () return track[f] (track) end)
	if ok then print ("ardour-test: track " .. f, v) end
end
for _, f in ipairs ({ "worst_output_latency", "worst_input_latency", "worst_route_latency", "io_latency" }) do
	local ok, v = pcall (function () return s[f] (s) end)
	if ok then print ("ardour-test: session " .. f, v) end
end
s:save_state ("", false, false, false, false, false)
close_session ()
