"""A label's sample and criterion checked once per statement, not once per label (PostgreSQL).

The aggregation job writes a split's labels in one INSERT and one UPDATE; a foreign key checks
and locks the referenced row once per label, which was half of a first run's write. These
triggers give the same guarantee per statement: the samples and criteria the new rows point to
are locked (FOR KEY SHARE, as a foreign key locks them), then any row pointing to one that does
not exist fails the statement; deleting a sample or criterion that labels still point to fails
too. The label's job pointer is only a record of which run wrote it and is not checked. Other
databases rely on the ORM's cascade alone.
"""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = """
CREATE OR REPLACE FUNCTION aggregation_label_keys_check() RETURNS trigger AS $$
DECLARE
    key record;
    wanted bigint;
    locked bigint;
    missing bigint;
BEGIN
    -- Per key: lock the rows pointed to, as a foreign key does; fewer rows locked than distinct
    -- keys means one that does not exist (or a row deleted meanwhile), found again for the
    -- message.
    FOR key IN SELECT * FROM (VALUES ('sample_id', 'annotation_sample', 'sample'),
                                     ('criterion_id', 'annotation_criterion', 'criterion'))
                            AS keys (label_column, target, noun) LOOP
        EXECUTE format('SELECT count(DISTINCT %I) FROM new_labels', key.label_column)
            INTO wanted;
        EXECUTE format(
            'SELECT count(*) FROM (SELECT 1 FROM %I t WHERE t.id IN '
            || '(SELECT %I FROM new_labels) FOR KEY SHARE OF t) locked_rows',
            key.target, key.label_column) INTO locked;
        IF locked < wanted THEN
            EXECUTE format(
                'SELECT n.%I FROM new_labels n WHERE NOT EXISTS '
                || '(SELECT 1 FROM %I t WHERE t.id = n.%I) LIMIT 1',
                key.label_column, key.target, key.label_column) INTO missing;
            RAISE EXCEPTION 'a label points to % %, which does not exist', key.noun, missing
                USING ERRCODE = 'foreign_key_violation';
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- TG_ARGV[0]: the label column that points to the table deleted from; TG_ARGV[1]: its noun.
CREATE OR REPLACE FUNCTION aggregation_label_target_kept() RETURNS trigger AS $$
DECLARE
    held bigint;
BEGIN
    EXECUTE format(
        'SELECT l.%I FROM aggregation_criterionlabel l '
        || 'WHERE l.%I IN (SELECT o.id FROM old_rows o) LIMIT 1',
        TG_ARGV[0], TG_ARGV[0]) INTO held;
    IF held IS NOT NULL THEN
        RAISE EXCEPTION '% % still has labels', TG_ARGV[1], held
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER aggregation_label_keys_insert AFTER INSERT ON aggregation_criterionlabel
    REFERENCING NEW TABLE AS new_labels
    FOR EACH STATEMENT EXECUTE FUNCTION aggregation_label_keys_check();
CREATE TRIGGER aggregation_label_keys_update AFTER UPDATE ON aggregation_criterionlabel
    REFERENCING NEW TABLE AS new_labels
    FOR EACH STATEMENT EXECUTE FUNCTION aggregation_label_keys_check();
CREATE TRIGGER aggregation_label_sample_kept AFTER DELETE ON annotation_sample
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION aggregation_label_target_kept('sample_id', 'sample');
CREATE TRIGGER aggregation_label_criterion_kept AFTER DELETE ON annotation_criterion
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION aggregation_label_target_kept('criterion_id', 'criterion');
"""

BACKWARD = """
DROP TRIGGER IF EXISTS aggregation_label_criterion_kept ON annotation_criterion;
DROP TRIGGER IF EXISTS aggregation_label_sample_kept ON annotation_sample;
DROP TRIGGER IF EXISTS aggregation_label_keys_update ON aggregation_criterionlabel;
DROP TRIGGER IF EXISTS aggregation_label_keys_insert ON aggregation_criterionlabel;
DROP FUNCTION IF EXISTS aggregation_label_target_kept();
DROP FUNCTION IF EXISTS aggregation_label_keys_check();
"""


def on_postgresql(sql):
    """A RunPython step that runs ``sql`` on PostgreSQL and does nothing elsewhere."""

    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("aggregation", "0014_datasetrow_data_text"),
        ("annotation", "0014_sample_sample_not_active"),
        ("core", "0003_job_kind_panel"),
    ]

    operations = [
        migrations.AlterField(
            model_name="criterionlabel",
            name="criterion",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="labels",
                to="annotation.criterion",
            ),
        ),
        migrations.AlterField(
            model_name="criterionlabel",
            name="job",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="core.job",
            ),
        ),
        migrations.AlterField(
            model_name="criterionlabel",
            name="sample",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="labels",
                to="annotation.sample",
            ),
        ),
        migrations.RunPython(on_postgresql(FORWARD), on_postgresql(BACKWARD)),
    ]
