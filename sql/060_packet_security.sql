-- Row-level security and privileges of the packet area (packet_store, packet_threads).

call memsub.install_row_security('memsub.packet_store', array['org', 'user']);
call memsub.install_row_security('memsub.packet_threads', array[]::text[]);

-- Read through row-level security; write only through the stored functions; delete only expired rows
-- (the immutability trigger refuses anything else), which memsub.purge_expired() does.
grant select on memsub.packet_store, memsub.packet_threads to memsub_app, memsub_analyst;
grant delete on memsub.packet_store to memsub_app;
grant usage on type memsub.packet_write_result to memsub_app, memsub_analyst;
grant execute on function
    memsub.write_packet(jsonb), memsub.write_packets(jsonb), memsub.purge_expired()
    to memsub_app;
grant execute on function
    memsub.get_packet(uuid), memsub.get_thread(uuid, integer, timestamptz), memsub.get_lineage(uuid, text, integer)
    to memsub_app, memsub_analyst;
