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
    wanted bigint;
    locked bigint;
    missing bigint;
BEGIN
    -- Lock the rows pointed to, as a foreign key does; fewer rows locked than pointed to means
    -- a key that does not exist (or a row deleted meanwhile), found again for the message.
    SELECT count(DISTINCT n.sample_id) INTO wanted FROM new_labels n;
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM annotation_sample s WHERE s.id IN (SELECT n.sample_id FROM new_labels n)
        FOR KEY SHARE OF s
    ) rows_locked;
    IF locked < wanted THEN
        SELECT n.sample_id INTO missing FROM new_labels n
            WHERE NOT EXISTS (SELECT 1 FROM annotation_sample s WHERE s.id = n.sample_id) LIMIT 1;
        RAISE EXCEPTION 'a label points to sample %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    SELECT count(DISTINCT n.criterion_id) INTO wanted FROM new_labels n;
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM annotation_criterion c
        WHERE c.id IN (SELECT n.criterion_id FROM new_labels n)
        FOR KEY SHARE OF c
    ) rows_locked;
    IF locked < wanted THEN
        SELECT n.criterion_id INTO missing FROM new_labels n
            WHERE NOT EXISTS (SELECT 1 FROM annotation_criterion c WHERE c.id = n.criterion_id)
            LIMIT 1;
        RAISE EXCEPTION 'a label points to criterion %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION aggregation_label_sample_kept() RETURNS trigger AS $$
DECLARE
    held bigint;
BEGIN
    SELECT l.sample_id INTO held FROM aggregation_criterionlabel l
        WHERE l.sample_id IN (SELECT o.id FROM old_rows o) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'sample % still has labels', held
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION aggregation_label_criterion_kept() RETURNS trigger AS $$
DECLARE
    held bigint;
BEGIN
    SELECT l.criterion_id INTO held FROM aggregation_criterionlabel l
        WHERE l.criterion_id IN (SELECT o.id FROM old_rows o) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'criterion % still has labels', held
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
    FOR EACH STATEMENT EXECUTE FUNCTION aggregation_label_sample_kept();
CREATE TRIGGER aggregation_label_criterion_kept AFTER DELETE ON annotation_criterion
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION aggregation_label_criterion_kept();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS aggregation_label_criterion_kept ON annotation_criterion;
DROP TRIGGER IF EXISTS aggregation_label_sample_kept ON annotation_sample;
DROP TRIGGER IF EXISTS aggregation_label_keys_update ON aggregation_criterionlabel;
DROP TRIGGER IF EXISTS aggregation_label_keys_insert ON aggregation_criterionlabel;
DROP FUNCTION IF EXISTS aggregation_label_criterion_kept();
DROP FUNCTION IF EXISTS aggregation_label_sample_kept();
DROP FUNCTION IF EXISTS aggregation_label_keys_check();
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(FORWARD)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(BACKWARD)


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
        migrations.RunPython(forward, backward),
    ]
