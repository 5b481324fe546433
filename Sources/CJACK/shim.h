#ifndef SPINET_CJACK_SHIM_H
#define SPINET_CJACK_SHIM_H
#include <jack/jack.h>
#include <jack/midiport.h>

// What Swift cannot call of libjack: jack_client_open is variadic (the
// server name travels as a variadic argument when JackServerName is set).
// Everything here is static inline: no C target needed.

/// Opens a client without starting a server (JackNoStartServer), on the
/// server named `server` (NULL: $JACK_DEFAULT_SERVER, else "default").
/// With `exact_name`, a name already taken fails (JackNameNotUnique) instead
/// of becoming "name-01": sessions save connections by the client's name.
/// `status` receives JACK's status bits either way.
static inline jack_client_t *spinet_jack_client_open(const char *name, const char *server,
                                                     int exact_name, jack_status_t *status) {
    int options = JackNoStartServer | (exact_name ? JackUseExactName : 0);
    if (server != NULL) {
        return jack_client_open(name, (jack_options_t)(options | JackServerName), status, server);
    }
    return jack_client_open(name, (jack_options_t)options, status);
}

#endif
