-- memsub 2.45.0: graph reads around a hub stop at their limit. traverse_graph, graph_neighbors(_as_of) and
-- entity_neighbourhood chose their rows after reading every edge of an entity (of a level), and
-- entity_neighbourhood every fact of its subject: the edges through a bitmap search of the exclusion constraint's
-- index, which cannot stop early, so from a hub of 300,000 edges a call read all of them whatever its limit, and a
-- call refused over max_walk_edges read them all before it was refused. The indexes below hold each read's order
-- after the entity's matching form, so a read takes an entity's edges (facts) in the order it returns them and
-- stops at its limit (sql/410_knowledge_graph.sql, sql/420_temporal_graph.sql, sql/430_graph_traversal.sql).
--
-- The orders end in names as written (target_entity, source_entity), beside the matching forms the searches are
-- keyed by. A B-tree entry holds about 2.7 kB, and max_key_bytes bounds the matching forms only (a name as written
-- can be longer: runs of spaces, decomposed accents), so an edge whose five texts together pass 2,400 bytes is
-- left out of the ordered indexes and kept in a small index of its own, which the reads search as well: such
-- edges are rare, and every write that was accepted before still is. Facts likewise (subject, predicate and
-- object past 2,400 bytes together need a max_key_bytes raised past its default).

create index idx_entity_relationships_out_by_confidence on memsub.entity_relationships
    (tenant_id, source_key collate "C", confidence desc, target_entity, relationship_type, relationship_id)
    where octet_length(source_key) + octet_length(source_entity) + octet_length(relationship_type)
          + octet_length(target_key) + octet_length(target_entity) <= 2400;
comment on index memsub.idx_entity_relationships_out_by_confidence is
    'Outgoing edges of an entity (by matching form), most confident first, then target, type and id: the order of '
    'traverse_graph''s and entity_neighbourhood''s rows. Edges whose texts pass 2,400 bytes together are in '
    'idx_entity_relationships_out_long instead.';

create index idx_entity_relationships_in_by_confidence on memsub.entity_relationships
    (tenant_id, target_key collate "C", confidence desc, source_entity, relationship_type, relationship_id)
    where octet_length(source_key) + octet_length(source_entity) + octet_length(relationship_type)
          + octet_length(target_key) + octet_length(target_entity) <= 2400;
comment on index memsub.idx_entity_relationships_in_by_confidence is
    'Incoming edges of an entity (by matching form), most confident first, then source, type and id: the order of '
    'traverse_graph''s and entity_neighbourhood''s rows. Edges whose texts pass 2,400 bytes together are in '
    'idx_entity_relationships_in_long instead.';

create index idx_entity_relationships_out_by_mentions on memsub.entity_relationships
    (tenant_id, source_key collate "C", source_entity, mention_count desc, target_entity, relationship_type,
     relationship_id)
    where octet_length(source_key) + octet_length(source_entity) + octet_length(relationship_type)
          + octet_length(target_key) + octet_length(target_entity) <= 2400;
comment on index memsub.idx_entity_relationships_out_by_mentions is
    'Outgoing edges of an entity (by matching form) by source as written, most mentioned first, then target, type '
    'and id: the order of graph_neighbors_as_of''s rows. Edges whose texts pass 2,400 bytes together are in '
    'idx_entity_relationships_out_long instead.';

create index idx_entity_relationships_out_long on memsub.entity_relationships (tenant_id, source_key collate "C")
    where octet_length(source_key) + octet_length(source_entity) + octet_length(relationship_type)
          + octet_length(target_key) + octet_length(target_entity) > 2400;
comment on index memsub.idx_entity_relationships_out_long is
    'Outgoing edges whose texts pass 2,400 bytes together, too long for the ordered indexes: the graph reads take '
    'them all beside the ordered ones.';

create index idx_entity_relationships_in_long on memsub.entity_relationships (tenant_id, target_key collate "C")
    where octet_length(source_key) + octet_length(source_entity) + octet_length(relationship_type)
          + octet_length(target_key) + octet_length(target_entity) > 2400;
comment on index memsub.idx_entity_relationships_in_long is
    'Incoming edges whose texts pass 2,400 bytes together, too long for the ordered indexes: the graph reads take '
    'them all beside the ordered ones.';

create index idx_knowledge_facts_by_confidence on memsub.knowledge_facts
    (tenant_id, subject_normalized collate "C", confidence desc, predicate, object_normalized, fact_id)
    where octet_length(subject_normalized) + octet_length(predicate) + octet_length(object_normalized) <= 2400;
comment on index memsub.idx_knowledge_facts_by_confidence is
    'Facts of a subject (by matching form), most confident first, then predicate, object and id: the order of '
    'entity_neighbourhood''s facts. Facts whose texts pass 2,400 bytes together are in idx_knowledge_facts_long '
    'instead.';

create index idx_knowledge_facts_long on memsub.knowledge_facts (tenant_id, subject_normalized collate "C")
    where octet_length(subject_normalized) + octet_length(predicate) + octet_length(object_normalized) > 2400;
comment on index memsub.idx_knowledge_facts_long is
    'Facts whose texts pass 2,400 bytes together, too long for idx_knowledge_facts_by_confidence: '
    'entity_neighbourhood takes them all beside the ordered ones.';
